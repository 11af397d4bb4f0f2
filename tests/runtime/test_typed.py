"""Typed tools end to end: registration, structured input, unstructured output, events."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from typing import Annotated, Any, Literal

import attrs
import pytest

from mini_harness import (
    Field,
    InvalidInputError,
    InvalidOutputError,
    MemorySink,
    ToolAnnotations,
    ToolRegistry,
    ToolRuntime,
)
from mini_harness.events import ToolFailed, ToolSucceeded
from mini_harness.runtime import anthropic_tool, mcp_tool, openai_tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Point:
    """A point.

    Attributes:
        x: Across.
        y: Down.
    """

    x: int
    y: float = 0.0


@attrs.frozen
class Label:
    text: str


@attrs.frozen
class Positive:
    value: int = attrs.field(validator=attrs.validators.ge(0))


@dataclasses.dataclass
class Drawing:
    color: Color
    points: list[Point]
    note: str | None


@attrs.frozen
class Reading:
    value: float


class Calls:
    """Records what each handler received, so tests can tell it never ran."""

    def __init__(self) -> None:
        self.received: list[tuple[str, tuple[Any, ...]]] = []

    def add(self, tool: str, *values: Any) -> None:
        self.received.append((tool, values))


@pytest.fixture(name="calls")
def _calls() -> Calls:
    return Calls()


@pytest.fixture(name="registry")
def _typed_registry(calls: Calls) -> ToolRegistry:
    """A registry of typed tools that assert the types they receive."""
    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: float = 1.0) -> float:
        """Add two numbers."""
        assert type(a) is int
        assert type(b) is float
        calls.add("add", a, b)
        return a + b

    @registry.tool(annotations=ToolAnnotations(read_only_hint=True))
    def move(point: Point) -> Point:
        """Move a point one step right."""
        assert isinstance(point, Point)
        assert type(point.x) is int
        assert type(point.y) is float
        calls.add("move", point)
        return Point(point.x + 1, point.y)

    @registry.tool
    def shout(label: Label) -> str:
        assert isinstance(label.text, str)
        calls.add("shout", label)
        return label.text.upper()

    @registry.tool(timeout=5)
    async def paint(color: Color, points: list[Point], note: str | None = None) -> Drawing:
        """Paint points."""
        assert isinstance(color, Color)
        assert all(isinstance(p, Point) for p in points)
        calls.add("paint", color, points, note)
        await asyncio.sleep(0)
        return Drawing(color, points, note)

    @registry.tool
    def tag(
        counts: dict[str, Annotated[int, Field(ge=0)]], mode: Literal["a", "b"] = "a"
    ) -> dict[str, Any]:
        assert all(type(v) is int for v in counts.values())
        calls.add("tag", counts, mode)
        return {"mode": mode, "total": sum(counts.values())}

    @registry.tool
    def check(reading: Positive) -> None:
        calls.add("check", reading)

    @registry.tool
    def batch(items: list[Positive]) -> int:
        calls.add("batch", items)
        return len(items)

    @registry.tool
    def measure(value: float) -> Reading:
        calls.add("measure", value)
        return Reading(value * float("inf"))

    @registry.tool
    def raw(data: Any) -> Any:
        calls.add("raw", data)
        return b"bytes"

    return registry


@pytest.fixture(name="runtime")
def _runtime(registry: ToolRegistry) -> ToolRuntime:
    return ToolRuntime(registry, MemorySink())


def _last_failure(runtime: ToolRuntime) -> ToolFailed:
    assert isinstance(runtime.sink, MemorySink)
    event = runtime.sink.events[-1]
    assert isinstance(event, ToolFailed)
    return event


class TestValidInput:
    @pytest.mark.parametrize(
        ("tool", "tool_input", "output"),
        [
            ("add", {"a": 2}, 3.0),
            ("add", {"a": 2.0, "b": 3}, 5.0),
            ("move", {"x": 1}, {"x": 2, "y": 0.0}),
            ("move", {"x": 1, "y": 2}, {"x": 2, "y": 2.0}),
            ("shout", {"text": "hi"}, "HI"),
            (
                "paint",
                {"color": "blue", "points": [{"x": 1, "y": 1.5}]},
                {"color": "blue", "points": [{"x": 1, "y": 1.5}], "note": None},
            ),
            ("tag", {"counts": {"x": 2, "y": 3}, "mode": "b"}, {"mode": "b", "total": 5}),
            ("check", {"value": 0}, None),
        ],
    )
    def test_dispatch_structures_input_and_unstructures_output(
        self, runtime: ToolRuntime, calls: Calls, tool: str, tool_input: Any, output: Any
    ) -> None:
        """Valid JSON reaches the function as declared Python types; the result is JSON."""
        result = runtime.dispatch(tool, tool_input)
        assert result.output == output
        assert [name for name, _ in calls.received] == [tool]
        assert result.input == tool_input

    def test_integral_float_becomes_int_and_int_becomes_float(
        self, runtime: ToolRuntime, calls: Calls
    ) -> None:
        """JSON 2.0 for an int parameter arrives as 2; JSON 3 for a float as 3.0."""
        runtime.dispatch("add", {"a": 2.0, "b": 3})
        assert calls.received == [("add", (2, 3.0))]

    def test_enum_and_nested_classes_arrive_as_instances(
        self, runtime: ToolRuntime, calls: Calls
    ) -> None:
        """An enum value arrives as the member; nested objects as class instances."""
        runtime.dispatch("paint", {"color": "red", "points": [{"x": 1}], "note": "n"})
        assert calls.received == [("paint", (Color.RED, [Point(1, 0.0)], "n"))]

    def test_async_typed_tool_dispatches_async(self, runtime: ToolRuntime) -> None:
        """An async typed function is an async tool, usable from dispatch_async."""
        tool = runtime.registry.get("paint")
        assert tool is not None
        assert tool.is_async
        assert tool.timeout == 5
        result = asyncio.run(runtime.dispatch_async("paint", {"color": "red", "points": []}))
        assert result.output == {"color": "red", "points": [], "note": None}

    def test_success_event_holds_the_unstructured_output(self, runtime: ToolRuntime) -> None:
        """ToolSucceeded records the JSON the class instance became."""
        runtime.dispatch("move", {"x": 5})
        assert isinstance(runtime.sink, MemorySink)
        event = runtime.sink.events[-1]
        assert isinstance(event, ToolSucceeded)
        assert event.output == {"x": 6, "y": 0.0}


class TestInvalidInput:
    @pytest.mark.parametrize(
        ("tool", "tool_input", "message"),
        [
            ("add", {"a": 1.5}, "Invalid input for add.a: expected integer"),
            ("add", {"a": "1"}, "Invalid input for add.a: expected integer"),
            ("add", {"a": True}, "Invalid input for add.a: expected integer"),
            ("add", {"a": 1, "b": "2"}, "Invalid input for add.b: expected number"),
            ("add", {}, 'Invalid input for add: missing required property "a"'),
            ("add", {"a": 1, "c": 2}, 'Invalid input for add: unexpected property "c"'),
            ("move", {"x": "5"}, "Invalid input for move.x: expected integer"),
            ("move", {"point": {"x": 5}}, 'Invalid input for move: unexpected property "point"'),
            ("shout", {"text": 5}, "Invalid input for shout.text: expected string"),
            (
                "paint",
                {"color": "green", "points": []},
                'Invalid input for paint.color: expected one of "red", "blue"',
            ),
            (
                "paint",
                {"color": "red", "points": [{"x": 1, "z": 0}]},
                'Invalid input for paint.points[0]: unexpected property "z"',
            ),
            (
                "tag",
                {"counts": {"x": -1}},
                "Invalid input for tag.counts.x: expected a number >= 0",
            ),
            (
                "tag",
                {"counts": {}, "mode": "c"},
                'Invalid input for tag.mode: expected one of "a", "b"',
            ),
        ],
    )
    def test_invalid_input_fails_validation_and_never_reaches_the_handler(
        self, runtime: ToolRuntime, calls: Calls, tool: str, tool_input: Any, message: str
    ) -> None:
        """Input the schema refuses fails with the usual message; the function never runs."""
        with pytest.raises(InvalidInputError) as info:
            runtime.dispatch(tool, tool_input)
        assert info.value.message == message
        assert calls.received == []
        failed = _last_failure(runtime)
        assert failed.error.kind == "invalid_input"
        assert failed.error.message == message

    def test_class_validators_reject_as_invalid_input(
        self, runtime: ToolRuntime, calls: Calls
    ) -> None:
        """An attrs validator refusing schema-valid input is recorded as invalid input."""
        with pytest.raises(InvalidInputError) as info:
            runtime.dispatch("check", {"value": -1})
        # attrs validators run in __init__, so the path is the object's, the text the field's.
        assert info.value.message == "Invalid input for check: 'value' must be >= 0: -1"
        assert info.value.path == "check"
        assert calls.received == []
        failed = _last_failure(runtime)
        assert failed.error.kind == "invalid_input"
        assert failed.error.path == "check"

    def test_nested_class_validator_names_the_item(
        self, runtime: ToolRuntime, calls: Calls
    ) -> None:
        """A validator failing inside a list names the item that failed."""
        with pytest.raises(InvalidInputError) as info:
            runtime.dispatch("batch", {"items": [{"value": 1}, {"value": -1}]})
        assert info.value.message == "Invalid input for batch.items[1]: 'value' must be >= 0: -1"
        assert calls.received == []


class TestOutput:
    def test_non_json_inside_a_class_is_invalid_output(self, runtime: ToolRuntime) -> None:
        """Unstructuring happens before the runtime's strict JSON check, which still applies."""
        with pytest.raises(InvalidOutputError, match="Tool measure returned a value that is not"):
            runtime.dispatch("measure", {"value": 1})
        assert _last_failure(runtime).error.kind == "invalid_output"

    def test_bytes_are_still_refused(self, runtime: ToolRuntime) -> None:
        """A typed tool cannot smuggle bytes past the JSON check."""
        with pytest.raises(InvalidOutputError, match="bytes is not a JSON value"):
            runtime.dispatch("raw", {"data": [1]})

    def test_output_its_own_schema_refuses_is_invalid_output(self) -> None:
        """A result that breaks the tool's outputSchema fails as invalid_output, naming
        where, instead of being recorded as a success."""
        registry = ToolRegistry()

        @registry.tool
        def locate(name: str) -> Point:
            """Where a named point is."""
            # attrs does not check types: a name that is not a number slips through
            return Point(x=int(name) if name.isdigit() else name)  # type: ignore[arg-type]

        runtime = ToolRuntime(registry, MemorySink())
        with pytest.raises(InvalidOutputError) as failed:
            runtime.dispatch("locate", {"name": "three"})
        assert failed.value.message == (
            "Invalid output for locate.x: expected integer (its outputSchema)"
        )
        assert _last_failure(runtime).error.kind == "invalid_output"
        assert runtime.dispatch("locate", {"name": "3"}).output == {"x": 3, "y": 0.0}

    def test_output_schema_only_for_object_returns(self, registry: ToolRegistry) -> None:
        """Class and dict returns carry an output schema; scalars and None do not."""
        schemas = {d.name: d.output_schema for d in registry.list()}
        assert schemas["add"] is None
        assert schemas["shout"] is None
        assert schemas["check"] is None
        assert schemas["raw"] is None
        assert schemas["tag"] == {"type": "object"}
        assert schemas["move"] == {
            "type": "object",
            "description": "A point.",
            "properties": {
                "x": {"type": "integer", "description": "Across."},
                "y": {"type": "number", "description": "Down.", "default": 0.0},
            },
            "required": ["x"],
            "additionalProperties": False,
        }

    def test_output_schema_is_exported_to_mcp_only(self, registry: ToolRegistry) -> None:
        """MCP and mini-harness' own shape carry outputSchema; OpenAI and Anthropic do not."""
        definition = next(d for d in registry.list() if d.name == "move")
        assert mcp_tool(definition)["outputSchema"] == definition.output_schema
        assert "outputSchema" not in str(openai_tool(definition))
        assert "output" not in str(anthropic_tool(definition))
