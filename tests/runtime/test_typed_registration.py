"""Registering typed tools: names, descriptions, required properties, and refusals."""

from __future__ import annotations

import dataclasses
from typing import Any

import attrs
import pytest

from mini_harness import (
    DuplicateToolError,
    MemorySink,
    SchemaDerivationError,
    ToolAnnotations,
    ToolRegistry,
    ToolRuntime,
)
from mini_harness.runtime.schema_derive import parse_docstring
from mini_harness.runtime.typed import derive_tool


@attrs.frozen
class Query:
    """Search the index.

    Attributes:
        text: Words to look for.
        limit: At most this many hits.
    """

    text: str
    limit: int = 10
    tags: list[str] = attrs.Factory(list)


@dataclasses.dataclass
class Undocumented:
    value: int


class Sentinel:
    """A default that is not JSON."""


SENTINEL = Sentinel()


def search(
    text: str, limit: int = 10, exact: bool | None = None, marker: Any = SENTINEL
) -> list[str]:
    """Search the index.

    Matches whole words.

    Args:
        text: Words to look for,
            separated by spaces.
        limit (int): At most this many hits.

    Returns:
        The matching document ids.

    Raises:
        ValueError: never.
    """
    return [text] * limit


class TestDecorator:
    def test_bare_decorator_registers_and_returns_the_function(self) -> None:
        """`@registry.tool` registers under the function's name and leaves it callable."""
        registry = ToolRegistry()
        decorated = registry.tool(search)
        assert decorated is search
        assert search("a", 2) == ["a", "a"]
        assert "search" in registry

    def test_keyword_form_overrides_name_description_annotations_timeout(self) -> None:
        """`@registry.tool(...)` takes a name, description, annotations and timeout."""
        registry = ToolRegistry()
        hints = ToolAnnotations(read_only_hint=True)
        registry.tool(name="find", description="Find.", annotations=hints, timeout=2)(search)
        tool = registry.get("find")
        assert tool is not None
        assert tool.definition.description == "Find."
        assert tool.definition.annotations == hints
        assert tool.timeout == 2

    def test_duplicate_names_are_still_refused(self) -> None:
        """A typed tool cannot take the name of one already registered."""
        registry = ToolRegistry()
        registry.tool(search)
        with pytest.raises(DuplicateToolError, match="Tool already registered: search"):
            registry.tool(search)

    def test_function_without_parameters_takes_an_empty_object(self) -> None:
        """No parameters: the schema allows only `{}`, and dispatch calls the function."""
        registry = ToolRegistry()

        @registry.tool
        def ping() -> str:
            return "pong"

        assert registry.list()[0].input_schema == {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
        }
        assert ToolRuntime(registry, MemorySink()).dispatch("ping", {}).output == "pong"


class TestDerivedDefinition:
    def test_docstring_gives_summary_and_argument_descriptions(self) -> None:
        """The summary (before Args/Returns/Raises) is the description; Args describe params."""
        definition, _ = derive_tool(search)
        assert definition.description == "Search the index.\n\nMatches whole words."
        assert definition.input_schema == {
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "Words to look for, separated by spaces.",
                },
                "limit": {
                    "type": "integer",
                    "description": "At most this many hits.",
                    "default": 10,
                },
                "exact": {"type": ["boolean", "null"], "default": None},
                "marker": {},
            },
            "required": ["text"],
            "additionalProperties": False,
        }

    def test_required_is_exactly_the_parameters_without_defaults(self) -> None:
        """Parameters with defaults, even non-JSON ones, are optional; the rest are required."""

        def tool(a: int, b: str, c: int = 1, d: Any = SENTINEL, e: list[int] | None = None) -> None:
            return None

        definition, _ = derive_tool(tool)
        assert definition.input_schema["required"] == ["a", "b"]
        assert "default" not in definition.input_schema["properties"]["d"]

    def test_one_class_parameter_is_the_whole_input(self) -> None:
        """A single attrs-class parameter makes its fields the tool's properties."""

        def run_query(query: Query) -> None:
            return None

        definition, _ = derive_tool(run_query)
        assert definition.description == "Search the index."
        assert definition.input_schema == {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Words to look for."},
                "limit": {
                    "type": "integer",
                    "description": "At most this many hits.",
                    "default": 10,
                },
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["text"],
            "additionalProperties": False,
        }

    def test_class_parameter_with_default_stays_nested(self) -> None:
        """A class parameter with a default, or beside others, is a nested property."""

        def with_default(query: Query | None = None) -> None:
            return None

        def beside(query: Query, dry_run: bool) -> None:
            return None

        for tool in (with_default, beside):
            definition, _ = derive_tool(tool)
            assert list(definition.input_schema["properties"]) == list(tool.__annotations__)[:-1]

    def test_dataclass_invented_docstring_is_not_a_description(self) -> None:
        """dataclasses' generated `Undocumented(value: int)` never becomes a description."""

        def tool(item: Undocumented) -> None:
            return None

        definition, _ = derive_tool(tool)
        assert definition.description == ""
        assert "description" not in str(definition.input_schema)

    def test_docstring_parser_reads_google_style(self) -> None:
        """Entries with types in parentheses and continuation lines are read whole."""
        doc = parse_docstring(search.__doc__)
        assert doc.entries == {
            "text": "Words to look for, separated by spaces.",
            "limit": "At most this many hits.",
        }


def _variadic(*items: int) -> None:
    return None


def _keywords(**options: int) -> None:
    return None


def _positional(a: int, /) -> None:
    return None


def _unannotated(a, b: int) -> None:  # type: ignore[no-untyped-def]
    return None


def _unresolvable(a: int, b: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
    return None


def _malformed(a: int) -> None:
    return None


_malformed.__annotations__["a"] = "list[int"


def _stale_docs(a: int) -> None:
    """Stale.

    Args:
        a: Fine.
        b: Gone.
    """


class TestRefusals:
    @pytest.mark.parametrize(
        ("func", "parameter", "fragment"),
        [
            (_variadic, "items", "parameter *items is variadic"),
            (_keywords, "options", "parameter **options is variadic"),
            (_positional, "a", "parameter a is positional-only"),
            (_unannotated, "a", "parameter a has no type annotation"),
            (_unresolvable, "b", "parameter b: cannot resolve 'NotDefinedAnywhere'"),
            (_malformed, None, "cannot resolve the annotations: "),
            (_stale_docs, None, "the docstring's Args section names b, not a parameter"),
        ],
    )
    def test_function_shape_problems_fail_at_registration(
        self, func: Any, parameter: str | None, fragment: str
    ) -> None:
        """Signatures that cannot map to named JSON properties fail, naming the parameter."""
        registry = ToolRegistry()
        with pytest.raises(SchemaDerivationError) as info:
            registry.tool(func)
        assert fragment in info.value.message
        assert info.value.parameter == parameter
        assert len(registry) == 0


def numpy_style(path: str, limit: int = 10) -> list[str]:
    """Find files.

    Parameters
    ----------
    path : str
        Where to look,
        relative to the workspace.
    limit : int
        At most this many.

    Returns
    -------
    list of str
        The files.
    """
    return []


def rest_style(path: str, limit: int = 10) -> list[str]:
    """Find files.

    :param path: Where to look,
        relative to the workspace.
    :param limit: At most this many.
    :returns: The files.
    """
    return []


class TestDocstringStyles:
    def test_numpy_and_rest_docstrings_describe_parameters(self) -> None:
        """NumPy and reST docstrings give the summary and each parameter's description, as
        Google ones do, and no section reaches the summary."""
        for func in (numpy_style, rest_style):
            registry = ToolRegistry()
            registry.tool(func)
            (definition,) = registry.list()
            assert definition.description == "Find files.", func.__name__
            properties = definition.input_schema["properties"]
            assert properties["path"]["description"] == "Where to look, relative to the workspace."
            assert properties["limit"]["description"] == "At most this many."
