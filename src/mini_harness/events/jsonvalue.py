"""JSON values: the only things that cross the wire, checked strictly."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeAlias

import orjson

from mini_harness.errors import JsonSyntaxError, NotJsonError, TooDeepError

JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, Any]

MAX_JSON_DEPTH = 100
"""The deepest nesting of arrays and objects any JSON value may have, wherever it enters
(CLI, Python API, MCP, a handler's output, a transcript line). `[]` is one level, `[[]]`
two. Deeper values are refused with "nested deeper than 100 levels". orjson writes at most
254 levels and parsers in the MCP stack stop near 200, so 100 leaves room for the
envelope around a value (a transcript line, a JSON-RPC request) and every path agrees."""

TOO_DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels"

REPR_LIMIT = 2000
"""The most characters of a value's repr put in a message."""

TEXT_LIMIT = 1_000_000
"""The most characters of an exception's text put in a message (a transcript line caps
what it records further, keeping the start and the size: see transcripts/codec.py)."""

# Refuse everything orjson would otherwise turn into JSON on its own (dataclasses,
# datetimes, subclasses): a tool's output must already be plain JSON.
_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
# Integers with more bits than this are named by their size, not written out in full.
_SHOWN_INT_BITS = 256


def _refuse(obj: object) -> None:
    raise TypeError(f"{type(obj).__name__} is not JSON")


def check_json(value: object) -> bytes:
    """Return the compact JSON encoding of `value`, or raise NotJsonError saying why not.

    TooDeepError (a NotJsonError) for a value nested deeper than MAX_JSON_DEPTH, or one
    that contains itself. The common path is one C call: the nesting is walked only when
    the encoding has more brackets than the limit, and NaN and Infinity (which orjson
    writes as null) are looked for only when the encoding holds a null.
    """
    try:
        encoded = orjson.dumps(value, default=_refuse, option=_STRICT)
    except (TypeError, orjson.JSONEncodeError) as exc:
        if nested_too_deep(value):
            raise TooDeepError(TOO_DEEP) from None
        raise NotJsonError(_describe(value, "$") or str(exc)) from None
    if encoded.count(b"[") + encoded.count(b"{") > MAX_JSON_DEPTH and nested_too_deep(value):
        raise TooDeepError(TOO_DEEP)
    # find, not `in`: `bytes in bytes` first tries the operand as an integer and builds
    # (and drops) a TypeError, which costs more than the search itself.
    if encoded.find(b"null") != -1:
        where = _describe(value, "$")
        if where:
            raise NotJsonError(where)
    return encoded


def nested_too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether lists, tuples and dicts in `value` nest deeper than `limit` levels.

    A walk with its own stack (no recursion, so no RecursionError at any depth); it stops
    at the first container past the limit, so a value that contains itself ends too.
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, dict | list | tuple)
        )
    return False


def bounded_repr(value: object) -> str:
    """repr(value) for a message: at most about REPR_LIMIT characters, and never an exception.

    A repr that raises (a broken `__repr__`, an integer past Python's digit limit, a value
    nested past the recursion limit) is replaced by a description of the value's type.
    """
    if isinstance(value, int) and value.bit_length() > _SHOWN_INT_BITS:
        return f"<{type(value).__name__} of {value.bit_length()} bits>"
    return _bounded(value, repr, REPR_LIMIT)


def bounded_str(value: object) -> str:
    """str(value) (e.g. an exception's message) under the same guarantees as bounded_repr,
    at most about TEXT_LIMIT characters."""
    return _bounded(value, str, TEXT_LIMIT)


def _bounded(value: object, show: Callable[[object], str], limit: int) -> str:
    try:
        text = show(value)
    except Exception:
        return f"<{_type_name(value)} object (its {show.__name__} failed)>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text)} characters]"


def _type_name(value: object) -> str:
    name = getattr(type(value), "__name__", "")
    return name if isinstance(name, str) else "unnamed"


def _describe(value: object, path: str) -> str | None:
    """Find the first non-JSON part of `value` and say what it is, or None.

    Only called on values no deeper than MAX_JSON_DEPTH, so the recursion is bounded.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path}: string with a lone surrogate"
        return None
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            return f"{path}: integer {bounded_repr(value)} does not fit in 64 bits"
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{path}: {bounded_repr(value)} is not a JSON number"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}: key {bounded_repr(key)} is not a string"
            found = _describe(item, f"{path}.{_bounded(key, str, REPR_LIMIT)}")
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _describe(item, f"{path}[{index}]")
            if found:
                return found
        return None
    return f"{path}: {_type_name(value)} is not a JSON value"


# orjson turns an integer outside 64 bits into a float without a word (or, past ~309
# digits, refuses it as infinity). Such an integer needs at least 19 digits in a row
# (-9223372036854775809); a float it became is at least this large.
_LONG_DIGITS = re.compile(r"\d{19}")
_WIDE_AS_FLOAT = 9.2e18
# Past this many digits an integer is named by its length (Python would not even read it).
_SHOWN_DIGITS = 40


def decode_json_input(text: str) -> JsonValue:
    """JSON text that comes from outside (`--tool-input`, a model's tool-call arguments) as
    a value, under the bounds every JSON value has: TooDeepError when it nests deeper than
    MAX_JSON_DEPTH, JsonSyntaxError when it does not parse (`not valid JSON (REASON)`),
    NotJsonError when it holds an integer that does not fit in 64 bits. The one decoder of
    such text."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # orjson's own limit, far past MAX_JSON_DEPTH
            raise TooDeepError(TOO_DEEP) from None
        if _LONG_DIGITS.search(text):
            _refuse_wide_integers(text)
        raise JsonSyntaxError(f"not valid JSON ({exc})") from None
    deep, wide = _bounds_of(value)
    if deep:
        raise TooDeepError(TOO_DEEP)
    if wide:  # seldom: only then is the text read again, integers as their digits
        _refuse_wide_integers(text)
    return value


def _bounds_of(value: JsonValue) -> tuple[bool, bool]:
    """Whether a decoded value nests deeper than MAX_JSON_DEPTH, and whether it holds a
    float as large as an integer outside 64 bits turns into. One walk of the value: model
    arguments are a few nodes holding long strings, where searching the text would cost
    more than parsing it."""
    wide = type(value) is float and abs(value) >= _WIDE_AS_FLOAT
    stack: list[tuple[JsonValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is not dict and kind is not list:
            continue
        if depth > MAX_JSON_DEPTH:
            return True, wide
        for child in item.values() if kind is dict else item:
            inner = type(child)
            if inner is dict or inner is list:
                stack.append((child, depth + 1))
            elif inner is float and abs(child) >= _WIDE_AS_FLOAT:
                wide = True
    return False, wide


def _refuse_wide_integers(text: str) -> None:
    """Raise NotJsonError for the first integer of `text` outside 64 bits (the stdlib
    parser hands each integer over as its digits)."""

    def integer(digits: str) -> int:
        size = len(digits.lstrip("-"))
        if size <= 20:
            number = int(digits)
            if -(2**63) <= number < 2**64:
                return number
        shown = digits if size <= _SHOWN_DIGITS else f"of {size} digits"
        raise NotJsonError(f"integer {shown} does not fit in 64 bits")

    try:
        json.loads(text, parse_int=integer)
    except ValueError as exc:
        if isinstance(exc, NotJsonError):
            raise
        # not JSON to the stdlib either: orjson's reason is the one given


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def nested_deeper_than(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if the arrays and objects of JSON text nest deeper than `limit` levels.

    Reads the text, not a value: it answers for JSON too deep for a parser to build.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False
