"""Input validation: JSON Schema 2020-12 via jsonschema-rs, with messages a person can act on.

Simple schemas (see simple_schema) are checked in plain Python with the same results, and
jsonschema-rs is imported only when a schema or an input needs it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from mini_harness.errors import InvalidSchemaError
from mini_harness.events import JsonObject
from mini_harness.runtime.simple_schema import SimpleSchema

if TYPE_CHECKING:
    from mini_harness.runtime.violation import Violation

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _refuse_remote(uri: str) -> NoReturn:
    # Remote $refs are never fetched: a tool's schema must be self-contained.
    raise ValueError(f"remote $ref {uri!r} is not fetched; inline it or use $defs")


def compile_schema(tool: str, schema: object) -> Any:
    """Check `schema` and compile it once; raise InvalidSchemaError naming the tool."""
    import jsonschema_rs

    if not isinstance(schema, dict):
        raise InvalidSchemaError(tool, f"Invalid input schema for tool {tool}: not an object")
    if schema.get("type") != "object":
        raise InvalidSchemaError(
            tool, f'Invalid input schema for tool {tool}: root must have "type": "object"'
        )
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        where = _pointer(exc.instance_path)
        raise InvalidSchemaError(
            tool,
            f"Invalid input schema for tool {tool}: {exc.message}"
            + (f" (at {where})" if where else ""),
        ) from None
    except (ValueError, TypeError) as exc:  # not a JSON document at all
        raise InvalidSchemaError(tool, f"Invalid input schema for tool {tool}: {exc}") from None
    try:
        return jsonschema_rs.validator_for(schema, retriever=_refuse_remote)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise InvalidSchemaError(tool, f"Invalid input schema for tool {tool}: {first}") from None


def _pointer(parts: Sequence[str | int]) -> str:
    return "/" + "/".join(str(p) for p in parts) if parts else ""


def display_path(tool: str, parts: Iterable[str | int]) -> str:
    """`echo`, `echo.text`, `echo.items[0]`, `echo["odd key"]`."""
    out = [tool]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{_quote(part)}]")
    return "".join(out)


def _quote(value: object) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _quote_list(values: Iterable[object]) -> str:
    return ", ".join(_quote(v) for v in values)


def _type_names(types: Sequence[str]) -> str:
    return " or ".join(types)


def _simple_types(context: Sequence[Sequence[Any]]) -> list[str] | None:
    """If every branch of a oneOf/anyOf failed only on `type`, the types they wanted."""
    wanted: list[str] = []
    for branch in context:
        if len(branch) != 1 or branch[0].kind.name != "type":
            return None
        for name in branch[0].kind.types:
            if name not in wanted:
                wanted.append(name)
    return wanted


def describe(error: Any) -> str:
    """Turn one jsonschema-rs error into the tail of our message ("expected string")."""
    kind = error.kind
    name = kind.name
    if name == "type":
        return f"expected {_type_names(kind.types)}"
    if name == "required":
        return f"missing required property {_quote(kind.property)}"
    if name == "enum":
        return f"expected one of {_quote_list(kind.options)}"
    if name == "const":
        return f"expected {_quote(kind.expected_value)}"
    if name in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
        return f"expected a number {op[name]} {_quote(kind.limit)}"
    if name == "multipleOf":
        return f"expected a multiple of {_quote(kind.multiple_of)}"
    if name == "minLength":
        return f"expected a string of at least {_count(kind.limit, 'character', 'characters')}"
    if name == "maxLength":
        return f"expected a string of at most {_count(kind.limit, 'character', 'characters')}"
    if name == "pattern":
        return f"expected a string matching {_quote(kind.pattern)}"
    if name == "format":
        return f"expected a string in format {_quote(kind.format)}"
    if name == "minItems":
        return f"expected at least {_count(kind.limit, 'item', 'items')}"
    if name == "maxItems":
        return f"expected at most {_count(kind.limit, 'item', 'items')}"
    if name == "uniqueItems":
        return "expected unique items"
    if name == "minProperties":
        return f"expected at least {_count(kind.limit, 'property', 'properties')}"
    if name == "maxProperties":
        return f"expected at most {_count(kind.limit, 'property', 'properties')}"
    if name in {"additionalProperties", "unevaluatedProperties"}:
        extra = list(kind.unexpected)
        noun = "property" if len(extra) == 1 else "properties"
        return f"unexpected {noun} {_quote_list(extra)}"
    if name in {"oneOf", "anyOf"}:
        types = _simple_types(kind.context)
        if types:
            return f"expected {_type_names(types)}"
        return f"expected a value matching one of {len(kind.context)} allowed schemas ({name})"
    if name == "oneOfMultipleValid":
        return "expected a value matching exactly one schema (oneOf), but several match"
    if name == "not":
        return "value matches a schema it must not match (not)"
    if name == "falseSchema":
        return "no value is allowed here"
    return str(error.message)


# How many times a validator checks a simple schema in Python before compiling it: the
# Python checks spare a short-lived process (a CLI dispatch) the import of jsonschema-rs,
# while a compiled validator is faster per call in a long-lived one.
PYTHON_CHECKS = 8


class InputValidator:
    """A compiled schema for one tool; `check` returns every violation (empty when valid).

    A schema in the simple subset (see simple_schema) needs no meta-schema check, since
    every such schema is valid, and its first PYTHON_CHECKS checks run in Python; then,
    or as soon as an input holds something the subset leaves to jsonschema-rs, it is
    compiled. Any other schema is checked and compiled at once. Either way the results are
    the same.
    """

    __slots__ = ("_python_checks", "_simple", "_validator", "tool")

    def __init__(self, tool: str, schema: JsonObject) -> None:
        self.tool = tool
        self._simple = SimpleSchema.of(schema)
        self._python_checks = PYTHON_CHECKS
        self._validator: Any = None if self._simple is not None else compile_schema(tool, schema)

    def _python_errors(self, simple: SimpleSchema, instance: object) -> list[Any] | None:
        """The errors found in Python, or None when jsonschema-rs must judge."""
        self._python_checks -= 1
        errors = simple.errors(instance) if self._python_checks >= 0 else None
        if errors is None:
            self._validator = compile_schema(self.tool, simple.to_schema())
            self._simple = None
        return errors

    def is_valid(self, instance: object) -> bool:
        simple = self._simple
        errors = None if simple is None else self._python_errors(simple, instance)
        if errors is not None:
            return not errors
        return bool(self._validator.is_valid(instance))

    def check(self, instance: object) -> list[Violation]:
        simple = self._simple
        errors: Iterable[Any] | None = (
            None if simple is None else self._python_errors(simple, instance)
        )
        if errors is None:
            if self._validator.is_valid(instance):
                return []
            errors = self._validator.iter_errors(instance)
        elif not errors:
            return []
        from mini_harness.runtime.violation import Violation

        violations = [
            Violation(
                path=display_path(self.tool, error.instance_path),
                keyword=error.kind.name,
                message=describe(error),
            )
            for error in errors
        ]
        # Shallow problems first: a wrong root type explains everything beneath it.
        violations.sort(key=lambda v: v.path.count(".") + v.path.count("["))
        return violations


def __getattr__(name: str) -> Any:
    # Violation lives in runtime.violation, imported once an input is invalid (attrs
    # compiles a class's methods when it is defined); it can still be imported from here.
    if name == "Violation":
        from mini_harness.runtime import violation

        return violation.Violation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _count(number: object, one: str, many: str) -> str:
    """`1 character`, `2 characters`: the noun agrees with the count."""
    return f"{number} {one if number == 1 else many}"
