"""JSON values: the only things that cross the wire, checked strictly."""

from __future__ import annotations

import math
import re
from typing import Any, TypeAlias

import orjson

JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, Any]

MAX_JSON_DEPTH = 100
"""The deepest nesting of arrays and objects any JSON value may have, wherever it enters
(CLI, Python API, MCP, a handler's output, a transcript line). `[]` is one level, `[[]]`
two. Deeper values are refused with "nested deeper than 100 levels". orjson writes at most
254 levels and parsers in the MCP stack stop near 200, so 100 leaves room for the
envelope around a value (a transcript line, a JSON-RPC request) and every path agrees."""

# Refuse everything orjson would otherwise turn into JSON on its own (dataclasses,
# datetimes, subclasses): a tool's output must already be plain JSON.
_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


class NotJsonError(ValueError):
    """The value is not a JSON value; the message says where and why."""


def _refuse(obj: object) -> None:
    raise TypeError(f"{type(obj).__name__} is not JSON")


def check_json(value: object) -> bytes:
    """Return the compact JSON encoding of `value`, or raise NotJsonError saying why not.

    orjson writes NaN and Infinity as null; null in the encoding is therefore checked by
    a walk, which is rare enough to keep the common path one C call.
    """
    try:
        encoded = orjson.dumps(value, default=_refuse, option=_STRICT)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise NotJsonError(_describe(value, "$") or str(exc)) from None
    # find, not `in`: `bytes in bytes` first tries the operand as an integer and builds
    # (and drops) a TypeError, which costs more than the search itself.
    if encoded.find(b"null") != -1:
        where = _describe(value, "$")
        if where:
            raise NotJsonError(where)
    return encoded


def _describe(value: object, path: str) -> str | None:
    """Find the first non-JSON part of `value` and say what it is, or None."""
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
            return f"{path}: integer {value} does not fit 64 bits"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path}: {value!r} is not a JSON number"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}: key {key!r} is not a string"
            found = _describe(item, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _describe(item, f"{path}[{index}]")
            if found:
                return found
        return None
    return f"{path}: {type(value).__name__} is not a JSON value"


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
