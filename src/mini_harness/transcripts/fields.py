"""The one decoder of declared values: msgspec, from the declarations themselves.

Each field of a declared class (events/wire.py `Declared`, a msgspec Struct) is read from
its camelCase key and checked against its type annotation by msgspec, straight from a
line's bytes (`decoder`) or from a JSON object already parsed (`structurer`: a line a
reader upcast from an older format, a payload handed over as an object). Adding an event
type is declaring its class (events/vocabulary.py). What msgspec refuses is said here in
the transcript's words: a FieldError with the reason and the wire path of the field
(`expected a string` at `.runId`, `required field missing` at `.error.message`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import msgspec

from mini_harness.errors import FieldError
from mini_harness.events import JsonObject
from mini_harness.events.wire import declared, fields

_EXPECTED = {
    "str": "a string",
    "int": "an integer",
    "bool": "a boolean",
    "object": "an object",
    "array": "an array",
    "float": "a number",
    "int | float": "a number",
}
_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<key>[^`]*)`")
_TYPE = re.compile(r"Expected `(?P<expected>[^`]*)`, got `[^`]*`")


def field_error(cls: type, exc: msgspec.ValidationError) -> FieldError:
    """msgspec's refusal of a `cls` value as the reason and wire path readers print."""
    match = _AT.match(str(exc))
    what, path = (match["what"], match["path"] or "") if match else (str(exc), "")
    missing = _MISSING.fullmatch(what)
    if missing:
        return FieldError("required field missing", f"{path}.{missing['key']}")
    typed = _TYPE.fullmatch(what)
    if typed or what.startswith("Invalid enum value"):
        choices = _choices(cls, path)
        if choices is not None:
            return FieldError(f"expected one of {', '.join(repr(c) for c in choices)}", path)
    if typed:
        expected = typed["expected"].removesuffix(" | null")
        return FieldError(f"expected {_EXPECTED.get(expected, expected)}", path)
    return FieldError(what[:1].lower() + what[1:], path)


_STEP = re.compile(r"\.(\w+)|\[\d+\]")


def _choices(cls: type, path: str) -> tuple[Any, ...] | None:
    """The choices of the Literal field at wire `path` of `cls` (None: not a literal)."""
    tp: Any = cls
    for step in _STEP.finditer(path):
        tp = _inner(tp)
        if step[1] is None:  # an array's element
            args = get_args(tp)
            tp = args[0] if args else Any
            continue
        if not declared(tp):
            return None
        hints = get_type_hints(tp)
        names = {field.encode_name: field.name for field in fields(tp)}
        name = names.get(step[1])
        if name is None:
            return None
        tp = hints[name]
    tp = _inner(tp)
    return get_args(tp) if get_origin(tp) is Literal else None


def _inner(tp: Any) -> Any:
    """`tp` without its `| None`."""
    if get_origin(tp) in {Union, UnionType}:
        args = [arg for arg in get_args(tp) if arg is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


@functools.cache
def decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    """The decoder of a line's bytes into `tp` (a declared class, or a union of tagged
    ones: the event types)."""
    return msgspec.json.Decoder(tp)


@functools.cache
def structurer(cls: type) -> Callable[[JsonObject], Any]:
    """The function that makes a `cls` from its parsed JSON object; FieldError says which
    field, by wire path, does not fit and why."""

    def structure(data: JsonObject) -> Any:
        try:
            return msgspec.convert(data, cls, strict=True)
        except msgspec.ValidationError as exc:
            raise field_error(cls, exc) from None

    return structure
