"""Annotation -> JSON Schema, table-driven, through the public derivation path."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional

import attrs
import jsonschema_rs
import pytest

from mini_harness import Field, RegistrationError, SchemaDerivationError, ToolRegistry
from mini_harness.events import JsonObject
from mini_harness.runtime.typed import derive_tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Empty(enum.Enum):
    pass


@attrs.frozen
class Point:
    """A point on the screen.

    Attributes:
        x: Pixels from the left.
    """

    x: int
    y: int = 0


@dataclasses.dataclass
class Size:
    width: float
    height: float = 1.0
    tags: list[str] = dataclasses.field(default_factory=list)


@attrs.frozen
class Line:
    start: Point
    end: Point | None = None


@attrs.frozen
class Node:
    children: list[Node]


@attrs.frozen
class Blob:
    data: bytes


POINT: JsonObject = {
    "type": "object",
    "description": "A point on the screen.",
    "properties": {
        "x": {"type": "integer", "description": "Pixels from the left."},
        "y": {"type": "integer", "default": 0},
    },
    "required": ["x"],
    "additionalProperties": False,
}

# (annotation, expected schema of a parameter annotated with it)
SUPPORTED: list[tuple[str, object, JsonObject]] = [
    ("str", str, {"type": "string"}),
    ("int", int, {"type": "integer"}),
    ("float", float, {"type": "number"}),
    ("bool", bool, {"type": "boolean"}),
    ("None", None, {"type": "null"}),
    ("Any", Any, {}),
    ("list[int]", list[int], {"type": "array", "items": {"type": "integer"}}),
    ("bare list", list, {"type": "array"}),
    ("tuple[str, ...]", tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
    (
        "dict[str, float]",
        dict[str, float],
        {"type": "object", "additionalProperties": {"type": "number"}},
    ),
    ("dict[str, Any]", dict[str, Any], {"type": "object"}),
    ("bare dict", dict, {"type": "object"}),
    ("Literal str", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    ("Literal mixed", Literal[1, "a", True], {"enum": [1, "a", True]}),
    ("Enum", Color, {"type": "string", "enum": ["red", "green"]}),
    ("IntEnum", Priority, {"type": "integer", "enum": [1, 2]}),
    ("int | None", int | None, {"type": ["integer", "null"]}),
    ("Optional[str]", Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
    (
        "Literal | None",
        Literal["a"] | None,
        {"type": ["string", "null"], "enum": ["a", None]},
    ),
    ("Enum | None", Color | None, {"type": ["string", "null"], "enum": ["red", "green", None]}),
    (
        "list[int] | None",
        list[int] | None,
        {"type": ["array", "null"], "items": {"type": "integer"}},
    ),
    ("attrs class", Point, POINT),
    (
        "dataclass",
        Size,
        {
            "type": "object",
            "properties": {
                "width": {"type": "number"},
                "height": {"type": "number", "default": 1.0},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["width"],
            "additionalProperties": False,
        },
    ),
    (
        "nested classes",
        Line,
        {
            "type": "object",
            "properties": {
                "start": POINT,
                "end": {**POINT, "type": ["object", "null"], "default": None},
            },
            "required": ["start"],
            "additionalProperties": False,
        },
    ),
    (
        "list of classes",
        list[Point],
        {"type": "array", "items": POINT},
    ),
    (
        "Annotated str description",
        Annotated[str, "What to say."],
        {
            "type": "string",
            "description": "What to say.",
        },
    ),
    (
        "Field numbers",
        Annotated[int, Field(ge=0, le=10, description="A count.")],
        {"type": "integer", "description": "A count.", "minimum": 0, "maximum": 10},
    ),
    (
        "Field exclusive bounds",
        Annotated[float, Field(gt=0, lt=1, multiple_of=0.25)],
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25},
    ),
    (
        "Field strings",
        Annotated[str, Field(min_length=1, max_length=5, pattern="^[a-z]+$")],
        {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
    ),
    (
        "Field lists",
        Annotated[list[int], Field(min_length=1, max_length=3)],
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    ),
    (
        "Field dicts",
        Annotated[dict[str, int], Field(max_length=2)],
        {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2},
    ),
    (
        "Field on optional",
        Annotated[int | None, Field(ge=0)],
        {"type": ["integer", "null"], "minimum": 0},
    ),
    (
        "Field inside a list",
        list[Annotated[int, Field(ge=0)]],
        {"type": "array", "items": {"type": "integer", "minimum": 0}},
    ),
    ("foreign metadata is ignored", Annotated[int, object()], {"type": "integer"}),
    (
        "unhashable foreign metadata",
        list[Annotated[int, {"unit": "m"}]],
        {"type": "array", "items": {"type": "integer"}},
    ),
]

# (annotation, text the registration error must contain)
UNSUPPORTED: list[tuple[str, object, str]] = [
    ("bytes", bytes, "parameter x: unsupported annotation bytes"),
    ("object", object, "parameter x: unsupported annotation object"),
    ("union", int | str, "parameter x: unsupported union int | str (only T | None"),
    ("int keys", dict[int, str], "parameter x: dict keys must be str, not int"),
    ("fixed tuple", tuple[int, str], "use tuple[T, ...] or list[T]"),
    ("float Literal", Literal[1.5], "Literal values must be str, int, bool or None"),
    ("empty enum", Empty, "enum Empty has no members"),
    ("recursive class", Node, "parameter x: field Node.children: class Node contains itself"),
    ("bad field", Blob, "parameter x: field Blob.data: unsupported annotation bytes"),
    ("nested bad field", list[Blob], "field Blob.data: unsupported annotation bytes"),
    ("ge on a string", Annotated[str, Field(ge=0)], "Field(ge=...) applies to numbers only"),
    ("pattern on an int", Annotated[int, Field(pattern="1")], "applies to strings only"),
    ("length on an int", Annotated[int, Field(min_length=1)], "applies to one of str, list"),
    ("bad pattern", Annotated[str, Field(pattern="(")], "Field(pattern='(') is not a valid"),
]


def _function_with(annotation: object, **more: object) -> Callable[..., None]:
    """A two-parameter function whose `x` carries `annotation` (a plain parameter)."""

    def tool(x: object, other: int = 0) -> None:
        return None

    tool.__annotations__ = {"x": annotation, "other": int, **more}
    return tool


class TestSupportedAnnotations:
    @pytest.mark.parametrize(
        ("annotation", "expected"),
        [pytest.param(a, e, id=i) for i, a, e in SUPPORTED],
    )
    def test_derived_schema_is_the_expected_json_schema(
        self, annotation: object, expected: JsonObject
    ) -> None:
        """Each supported annotation becomes exactly the documented JSON Schema."""
        definition, _ = derive_tool(_function_with(annotation))
        assert definition.input_schema == {
            "type": "object",
            "properties": {"x": expected, "other": {"type": "integer", "default": 0}},
            "required": ["x"],
            "additionalProperties": False,
        }

    @pytest.mark.parametrize("annotation", [pytest.param(a, id=i) for i, a, _ in SUPPORTED])
    def test_every_derived_schema_is_valid_json_schema(self, annotation: object) -> None:
        """jsonschema-rs accepts every derived schema against the 2020-12 meta-schema."""
        definition, _ = derive_tool(_function_with(annotation))
        assert jsonschema_rs.meta.is_valid(definition.input_schema)
        ToolRegistry().register(definition, lambda _: None)  # compiles too

    @pytest.mark.parametrize(
        ("annotation", "expected"),
        [pytest.param(a, e, id=i) for i, a, e in SUPPORTED],
    )
    def test_object_shaped_returns_give_the_output_schema(
        self, annotation: object, expected: JsonObject
    ) -> None:
        """The return annotation's schema is the output schema when it is an object (MCP)."""
        definition, _ = derive_tool(_function_with(int, **{"return": annotation}))
        assert definition.output_schema == (expected if expected.get("type") == "object" else None)
        if definition.output_schema is not None:
            assert jsonschema_rs.meta.is_valid(definition.output_schema)


class TestUnsupportedAnnotations:
    @pytest.mark.parametrize(
        ("annotation", "fragment"),
        [pytest.param(a, f, id=i) for i, a, f in UNSUPPORTED],
    )
    def test_registration_fails_naming_the_parameter(
        self, annotation: object, fragment: str
    ) -> None:
        """An annotation with no schema fails at registration, and nothing is registered."""
        registry = ToolRegistry()
        with pytest.raises(SchemaDerivationError) as info:
            registry.tool(_function_with(annotation))
        assert info.value.message.startswith("Cannot derive a schema for tool tool: ")
        assert fragment in info.value.message
        assert info.value.parameter == "x"
        assert info.value.tool == "tool"
        assert isinstance(info.value, RegistrationError)
        assert len(registry) == 0

    def test_unsupported_return_annotation_names_return(self) -> None:
        """A return annotation with no schema fails too, naming `return`."""
        with pytest.raises(SchemaDerivationError, match="the return annotation: unsupp") as info:
            derive_tool(_function_with(int, **{"return": bytes}))
        assert info.value.parameter == "return"

    def test_bad_field_arguments_fail_when_written(self) -> None:
        """Field() refuses a bound that is not a number and a negative length."""
        with pytest.raises(TypeError, match=r"Field\(ge=\.\.\.\) must be a number"):
            Field(ge="0")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be an integer >= 0"):
            Field(min_length=-1)
