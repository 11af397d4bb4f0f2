"""Validation of a tool's input, and of a typed tool's output against its outputSchema:
JSON Schema via jsonschema-rs, with messages a person can act on."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import jsonschema_rs
import orjson

from mini_harness.errors import (
    InvalidSchemaError,
    NotJsonError,
    RemoteSchemaError,
    TooDeepError,
    Violation,
    counted,
)
from mini_harness.events import JsonObject, JsonValue
from mini_harness.events.jsonvalue import decode_json_input

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
# The meta-schemas jsonschema-rs carries with it (compared without a trailing "#"): any
# other "$schema" would have to be fetched, and nothing is fetched at registration.
_KNOWN_META_SCHEMAS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-04/schema",
        "http://json-schema.org/schema",
    }
)
# How jsonschema-rs words a reference it could not resolve.
_UNRESOLVED = re.compile(r"Resource '(?P<uri>[^']*)' is not present in a registry")


def _refuse_remote(uri: str) -> NoReturn:
    # Called by jsonschema-rs for a reference outside the schema: a tool's schema must be
    # self-contained, so the resource is never fetched.
    raise ValueError(f"{uri} is not fetched")


def _invalid(tool: str, detail: str, which: str) -> InvalidSchemaError:
    return InvalidSchemaError(tool, f"Invalid {which} schema for tool {tool}: {detail}")


def _remote(tool: str, keyword: str, uri: str, which: str) -> RemoteSchemaError:
    return RemoteSchemaError(
        tool,
        f"Invalid {which} schema for tool {tool}: {keyword} names {uri}, a resource outside "
        "the schema; remote resources are never fetched (inline it or use $defs)",
        uri=uri,
    )


def compile_schema(tool: str, schema: object, which: str = "input") -> Any:
    """Check `schema` (the tool's `which` schema: input or output) and compile it once;
    raise InvalidSchemaError naming the tool."""
    if not isinstance(schema, dict):
        raise _invalid(tool, "not an object", which)
    if schema.get("type") != "object":
        raise _invalid(tool, 'root must have "type": "object"', which)
    # A root "$schema" jsonschema-rs does not carry would be fetched to check the schema.
    meta = schema.get("$schema")
    if "$schema" in schema and not isinstance(meta, str):
        raise _invalid(tool, '"$schema" must be a string', which)
    if isinstance(meta, str) and meta.removesuffix("#") not in _KNOWN_META_SCHEMAS:
        raise _remote(tool, '"$schema"', meta, which)
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(str(part) for part in exc.instance_path)
        raise _invalid(tool, exc.message + (f" (at /{where})" if where else ""), which) from None
    except (ValueError, TypeError) as exc:  # not a JSON document at all
        raise _invalid(tool, str(exc), which) from None
    try:
        return jsonschema_rs.validator_for(schema, retriever=_refuse_remote)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        unresolved = _UNRESOLVED.match(first)
        if unresolved:
            raise _remote(tool, "a reference", unresolved["uri"], which) from None
        raise _invalid(tool, first, which) from None


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


# Keywords whose message is a fixed text and the one value jsonschema-rs reports for them.
_QUOTED = {
    "minimum": ("expected a number >=", "limit"),
    "maximum": ("expected a number <=", "limit"),
    "exclusiveMinimum": ("expected a number >", "limit"),
    "exclusiveMaximum": ("expected a number <", "limit"),
    "required": ("missing required property", "property"),
    "const": ("expected", "expected_value"),
    "multipleOf": ("expected a multiple of", "multiple_of"),
    "pattern": ("expected a string matching", "pattern"),
    "format": ("expected a string in format", "format"),
}
# What a size keyword bounds, and the noun it counts (with its plural when not noun + "s").
_SIZES: dict[str, tuple[str, str, str | None]] = {
    "minLength": ("a string of at least", "character", None),
    "maxLength": ("a string of at most", "character", None),
    "minItems": ("at least", "item", None),
    "maxItems": ("at most", "item", None),
    "minProperties": ("at least", "property", "properties"),
    "maxProperties": ("at most", "property", "properties"),
}
_FIXED = {
    "uniqueItems": "expected unique items",
    "oneOfMultipleValid": "expected a value matching exactly one schema (oneOf), but several match",
    "not": "value matches a schema it must not match (not)",
    "falseSchema": "no value is allowed here",
}


def describe(error: Any) -> str:
    """Turn one jsonschema-rs error into the tail of our message ("expected string")."""
    kind = error.kind
    name = kind.name
    if name in _FIXED:
        return _FIXED[name]
    if name in _QUOTED:
        text, attribute = _QUOTED[name]
        return f"{text} {_quote(getattr(kind, attribute))}"
    if name == "type":
        return f"expected {' or '.join(kind.types)}"
    if name == "enum":
        return f"expected one of {_quote_list(kind.options)}"
    if name in _SIZES:
        what, one, many = _SIZES[name]
        return f"expected {what} {counted(kind.limit, one, many)}"
    if name in {"additionalProperties", "unevaluatedProperties"}:
        extra = list(kind.unexpected)
        noun = "property" if len(extra) == 1 else "properties"
        return f"unexpected {noun} {_quote_list(extra)}"
    if name in {"oneOf", "anyOf"}:
        types = _simple_types(kind.context)
        if types:
            return f"expected {' or '.join(types)}"
        return f"expected a value matching one of {len(kind.context)} allowed schemas ({name})"
    return str(error.message)


class InputValidator:
    """A tool's schema, checked and compiled once; `check` returns every violation.

    The same validator checks a tool's output against its outputSchema (`which="output"`):
    one validator, one set of messages, for what goes into a tool and what comes out."""

    __slots__ = ("_validator", "tool")

    def __init__(self, tool: str, schema: JsonObject, which: str = "input") -> None:
        self.tool = tool
        self._validator: Any = compile_schema(tool, schema, which)

    def check(self, instance: object) -> list[Violation]:
        """Every violation, shallow ones first (empty when the input is valid)."""
        validator = self._validator
        if validator.is_valid(instance):
            return []
        violations = [
            Violation(
                path=display_path(self.tool, error.instance_path),
                keyword=error.kind.name,
                message=describe(error),
            )
            for error in validator.iter_errors(instance)
        ]
        # Shallow problems first: a wrong root type explains everything beneath it.
        violations.sort(key=lambda v: v.path.count(".") + v.path.count("["))
        return violations


def decode_arguments(tool: str, text: str) -> tuple[JsonValue, str | None]:
    """A call's input given as JSON text (a model's tool-call arguments), and why it cannot
    be used (None when it can). Text that is not usable is kept as it is, and its problem
    is the message the caller is told: `Invalid arguments for TOOL: not valid JSON (...)`,
    asking for one JSON object, when it does not parse; `Invalid input for TOOL: ...` when
    it breaks the bounds `--tool-input` has (nesting, integers outside 64 bits), in the
    same words."""
    try:
        return decode_json_input(text), None
    except TooDeepError as exc:
        return text, f"Invalid input for {tool}: {exc}"
    except NotJsonError as exc:
        if str(exc).startswith("not valid JSON"):
            return (
                text,
                f"Invalid arguments for {tool}: {exc}. Send the arguments as one JSON object.",
            )
        return text, f"Invalid input for {tool}: {exc}"
