"""Wire format v1: events to JSON lines and back. Field names are camelCase on the wire."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from types import UnionType
from typing import Any, Literal, NamedTuple, TypeVar, Union, get_args, get_origin, get_type_hints

import attrs
import orjson

from mini_harness.events import (
    KNOWN_EVENT_TYPES,
    MAX_JSON_DEPTH,
    PAYLOAD_CACHE_FIELDS,
    Event,
    JsonObject,
    ToolCalled,
    ToolError,
    ToolSucceeded,
    UnknownEvent,
    event_type,
)

HASH_HEX_DIGITS = 32
"""`prev` is the first 128 bits of SHA-256 of the previous line, in lowercase hex."""
_sha256 = hashlib.sha256
HASH_BYTES = HASH_HEX_DIGITS // 2


class DecodeError(ValueError):
    """A line is not a valid event; the message says why."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def line_hash(line: bytes) -> str:
    """The hash the next line carries in `prev`: over the exact bytes, without the newline."""
    # digest().hex() of the first half is the same text as hexdigest()[:32], and faster.
    return _sha256(line).digest()[:HASH_BYTES].hex()


# (attribute, wire key) per class, computed once: the single place the names are mapped.
_WIRE_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    cls: tuple(
        (f.name, camel(f.name))
        for f in attrs.fields(cls)
        if f.name != "ts" and f.name not in PAYLOAD_CACHE_FIELDS
    )
    for cls in (*KNOWN_EVENT_TYPES, ToolError)
}
_ERROR_FIELDS = _WIRE_FIELDS[ToolError]


def _error_json(error: ToolError) -> JsonObject:
    out: JsonObject = {}
    for attr, key in _ERROR_FIELDS:
        value = getattr(error, attr)
        if value is not None:
            out[key] = value
    return out


def event_to_wire(event: Event, seq: int, prev: str | None) -> JsonObject:
    """The JSON object of one line: type, seq, ts, prev (all but the first line), payload."""
    out: JsonObject = {"type": event_type(event), "seq": seq, "ts": event.ts}
    if prev is not None:
        out["prev"] = prev
    if isinstance(event, UnknownEvent):
        for key, value in event.data.items():
            out.setdefault(key, value)
        return out
    for attr, key in _WIRE_FIELDS[type(event)]:
        value = getattr(event, attr)
        out[key] = _error_json(value) if isinstance(value, ToolError) else value
    return out


# A line holds plain JSON only: bytes, lone surrogates, dataclasses, datetimes and other
# objects raise (orjson.JSONEncodeError, a TypeError) instead of being converted. NaN and
# Infinity cannot be refused without a walk; orjson writes them as null (still a valid line).
STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def refuse_non_json(obj: object) -> None:
    """orjson's `default` for a line: everything orjson does not write by itself is refused."""
    raise TypeError(f"{type(obj).__name__} is not JSON")


def tool_called_fields(
    ts: str, run_id: str, call_id: str, name: str, input_json: bytes
) -> JsonObject:
    """The wire object of a ToolCalled whose input is already compact JSON (`input_json`).

    `seq` and `prev` hold placeholders in their places (the wire order): encode_direct, or
    the writer under its lock, fills them in.
    """
    return {
        "type": "ToolCalled",
        "seq": 0,
        "ts": ts,
        "prev": "",
        "runId": run_id,
        "callId": call_id,
        "name": name,
        "input": orjson.Fragment(input_json),
    }


def tool_succeeded_fields(  # noqa: PLR0917 - positional: called on every dispatch
    ts: str, run_id: str, call_id: str, name: str, output_json: bytes, duration_ms: float
) -> JsonObject:
    """The wire object of a ToolSucceeded whose output is already compact JSON (as above)."""
    return {
        "type": "ToolSucceeded",
        "seq": 0,
        "ts": ts,
        "prev": "",
        "runId": run_id,
        "callId": call_id,
        "name": name,
        "output": orjson.Fragment(output_json),
        "durationMs": duration_ms,
    }


def encode_direct(fields: JsonObject, seq: int, prev: str | None) -> bytes | None:
    """The line of `fields` (from tool_called_fields or tool_succeeded_fields) as event `seq`.

    None when this route cannot make it: the first line of a file (no `prev`), or a string
    orjson refuses (a lone surrogate): encode_line makes it, or says why it cannot.
    """
    if prev is None:
        return None
    fields["seq"] = seq
    fields["prev"] = prev
    try:
        return orjson.dumps(fields, default=refuse_non_json, option=STRICT)
    except TypeError:
        return None


def encode_line(event: Event, seq: int, prev: str | None) -> bytes:
    """One compact JSON line, without the trailing newline.

    The two events of every dispatch take a direct route when dispatch already serialised
    their payload while checking it: the payload is embedded as is (orjson.Fragment)
    instead of being serialised again (tool_called_fields, tool_succeeded_fields). The
    bytes are the same as `encode_wire(event_to_wire(event, seq, prev))`.
    """
    line = None
    if type(event) is ToolCalled and event.input_json is not None:
        fields = tool_called_fields(
            event.ts, event.run_id, event.call_id, event.name, event.input_json
        )
        line = encode_direct(fields, seq, prev)
    elif type(event) is ToolSucceeded and event.output_json is not None:
        fields = tool_succeeded_fields(
            event.ts,
            event.run_id,
            event.call_id,
            event.name,
            event.output_json,
            event.duration_ms,
        )
        line = encode_direct(fields, seq, prev)
    if line is not None:
        return line
    return orjson.dumps(event_to_wire(event, seq, prev), default=refuse_non_json, option=STRICT)


def encode_wire(wire: JsonObject) -> bytes:
    """encode_line for a line's JSON object that was already built (and e.g. redacted)."""
    return orjson.dumps(wire, default=refuse_non_json, option=STRICT)


# --- decoding: derived from the event classes ----------------------------------------
# Each field of an event class is read from its camelCase key and checked against its type
# annotation. Adding an event type is declaring its class (events/vocabulary.py); its
# decoder is derived from the declaration on first use. The common case of a field is one
# `type(value) is T` test; anything else goes to the field's check, which converts (an
# integer for a float, an object for a nested attrs class, an array for a tuple), takes
# the default of an absent optional field, or says exactly what is wrong.

_MISSING: Any = object()
_T = TypeVar("_T")


class _Invalid(Exception):
    """A value does not fit its field; `path` is where, relative to the value checked."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


class _NoValueIsOfThisType:
    """The `exact` type of fields whose every value goes to the check."""


Check = Callable[[Any], Any]


@attrs.frozen
class WireField:
    """One field of an event class as it is on the wire."""

    key: str  # the wire key: the attribute's name in camelCase
    attr: str
    exact: type  # a value of exactly this type is taken as is
    check: Check  # any other value: converted, or _Invalid says why not
    default: Callable[[], Any] | None  # for an absent field; None: the field is required
    keyword: bool  # passed by keyword (a kw_only attribute)


def _any(value: Any) -> Any:
    return value


def _expect(what: str) -> Check:
    def check(value: Any) -> Any:
        raise _Invalid(f"expected {what}")

    return check


def _float(value: Any) -> float:
    # An integer is a float's value as it is (PEP 484's numeric tower): kept, so that what
    # a line says (`"durationMs":0`) is what reports of it show.
    if type(value) is int:
        return value
    raise _Invalid("expected a number")


def _optional(check: Check) -> Check:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)

    return optional


def _sequence(exact: type, check: Check, make: type) -> Check:
    def sequence(value: Any) -> Any:
        if type(value) is not list:
            raise _Invalid("expected an array")
        if check is _any:
            return make(value)
        out = []
        for index, element in enumerate(value):
            if type(element) is exact:
                out.append(element)
                continue
            try:
                out.append(check(element))
            except _Invalid as exc:
                raise _Invalid(exc.reason, f"[{index}]{exc.path}") from None
        return make(out)

    return sequence


def _literal(choices: tuple[Any, ...]) -> Check:
    def literal(value: Any) -> Any:
        if any(value == choice and type(value) is type(choice) for choice in choices):
            return value
        raise _Invalid(f"expected one of {', '.join(repr(c) for c in choices)}")

    return literal


_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object"}


def _field_type(tp: Any) -> tuple[type, Check]:
    """(exact type, check) for a field annotated `tp`; TypeError for what the wire cannot hold."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return _NoValueIsOfThisType, _any
    if tp is float:
        return float, _float
    if tp in _NAMES:
        return tp, _expect(_NAMES[tp])
    if origin is dict and args in {(str, Any), ()}:
        return dict, _expect("an object")
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is ...):
        return _NoValueIsOfThisType, _sequence(*_field_type(args[0]), origin)
    if origin is Literal:
        return _NoValueIsOfThisType, _literal(args)
    if origin in {Union, UnionType} and type(None) in args and len(args) == 2:
        exact, check = _field_type(next(arg for arg in args if arg is not type(None)))
        return exact, _optional(check)
    if attrs.has(tp):
        return _NoValueIsOfThisType, functools.partial(_decode_nested, tp)
    raise TypeError(f"a transcript field cannot hold {tp!r}")


def _default(field: attrs.Attribute[Any]) -> Callable[[], Any] | None:
    default: Any = field.default
    if default is attrs.NOTHING:
        return None
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            raise TypeError(f"{field.name}: a default that takes self cannot be decoded")
        factory: Callable[[], Any] = default.factory
        return factory
    return lambda: default


@functools.cache
def wire_fields(cls: type) -> tuple[WireField, ...]:
    """The fields of an attrs class as they are read from a line, in declaration order."""
    hints = get_type_hints(cls)
    return tuple(
        WireField(
            camel(field.name),
            field.name,
            *_field_type(hints[field.name]),
            _default(field),
            field.kw_only,
        )
        for field in attrs.fields(cls)
        if field.init and field.name not in PAYLOAD_CACHE_FIELDS
    )


@functools.cache
def _structurer(cls: type) -> Callable[[JsonObject], Any]:
    """The function that makes a `cls` from its JSON object, derived from `wire_fields`.

    Generated once per class (as attrs generates `__init__`): the fast test of each field
    inline, everything else through `_settle`. Raises _Invalid with the field's path.
    """
    fields = wire_fields(cls)
    namespace: dict[str, Any] = {"cls": cls, "MISSING": _MISSING, "settle": _settle}
    body = ["def structure(data):", "    get = data.get"]
    args = []
    for index, field in enumerate(fields):
        namespace[f"field{index}"] = field
        namespace[f"exact{index}"] = field.exact
        value = f"v{index}"
        body.append(f"    {value} = get({field.key!r}, MISSING)")
        test = (
            f"{value} is MISSING" if field.check is _any else f"type({value}) is not exact{index}"
        )
        body.append(f"    if {test}: {value} = settle(field{index}, {value})")
        args.append(f"{field.attr}={value}" if field.keyword else value)
    body.append(f"    return cls({', '.join(args)})")
    exec("\n".join(body), namespace)  # noqa: S102 - source built above from the field table
    structure: Callable[[JsonObject], Any] = namespace["structure"]
    return structure


def _settle(field: WireField, value: Any) -> Any:
    """A field's value that is not simply of its type: converted, defaulted, or refused."""
    if value is _MISSING:
        if field.default is None:
            raise _Invalid("required field missing", f".{field.key}")
        return field.default()
    try:
        return field.check(value)
    except _Invalid as exc:
        raise _Invalid(exc.reason, f".{field.key}{exc.path}") from None


def wire_value(value: Any) -> Any:
    """The JSON value of a decoded field: an attrs value as the object of its wire keys
    (fields that are None left out, as writers leave them out), a tuple as an array."""
    cls: Any = type(value)
    if attrs.has(cls):
        return {
            field.key: wire_value(item)
            for field in wire_fields(cls)
            if (item := getattr(value, field.attr)) is not None
        }
    if type(value) is tuple:
        return [wire_value(item) for item in value]
    return value


def _decode_nested(cls: Any, value: Any) -> Any:
    if type(value) is not dict:
        raise _Invalid("expected an object")
    return _structurer(cls)(value)


def decode_object(cls: type[_T], data: JsonObject) -> _T:
    """An instance of the attrs class `cls` from its JSON object (wire keys); DecodeError
    says which field is wrong and why, e.g. `expected a string @ $.runId`."""
    structure = _structurer(cls)  # type: ignore[arg-type] # a class is hashable
    try:
        decoded: _T = structure(data)
    except _Invalid as exc:
        raise DecodeError(f"{exc.reason} @ ${exc.path}") from None
    return decoded


EVENT_CLASSES: dict[str, type] = {cls.__name__: cls for cls in KNOWN_EVENT_TYPES}
"""Event types by wire name: the classes of `mini_harness.events.Event`."""

_EVENT_STRUCTURERS: dict[str, Callable[[JsonObject], Any]] = {}


class WireLine(NamedTuple):
    """A decoded line: its envelope (seq, prev) and its event."""

    seq: int
    prev: str | None
    event: Event


def load_line(line: bytes) -> JsonObject:
    """Parse one line (without its newline) to its JSON object; DecodeError if it is not one.

    A line whose values nest deeper than MAX_JSON_DEPTH is refused as such. Only a line
    with more than that many `[` and `{` bytes can, so only those are walked.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if _nesting(line) > MAX_JSON_DEPTH + 1:  # orjson stops at 1024 levels
            raise DecodeError(_TOO_DEEP) from None
        raise DecodeError(f"not JSON ({exc})") from None
    if type(data) is not dict:
        raise DecodeError("not a JSON object")
    if line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH and _deeper_than(
        data, MAX_JSON_DEPTH + 1
    ):
        raise DecodeError(_TOO_DEEP)
    return data


_TOO_DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels"
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` (the line's object, level 1) nests more than `limit` levels."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if type(item) is dict else item
        stack.extend((child, depth + 1) for child in children if type(child) in {dict, list})
    return False


def _nesting(line: bytes) -> int:
    """The deepest bracket nesting of a line that orjson could not parse (strings skipped)."""
    depth = deepest = 0
    for token in _TOKENS.findall(line):
        if token in {b"[", b"{"}:
            depth += 1
            deepest = max(deepest, depth)
        elif token in {b"]", b"}"}:
            depth -= 1
    return deepest


def decode_wire(data: JsonObject) -> tuple[int, str | None, Event]:
    """(seq, prev, event) of a parsed line; unknown types become UnknownEvent.

    The one check of the envelope every line has (type, seq, ts, prev) and the typing of
    its event; DecodeError says what is wrong.
    """
    kind = data.get("type")
    seq = data.get("seq")
    prev = data.get("prev")
    if type(kind) is not str:
        raise DecodeError('missing "type"')
    if type(seq) is not int or seq < 0:
        raise DecodeError('missing or invalid "seq"')
    if type(data.get("ts")) is not str:
        raise DecodeError('missing or invalid "ts"')
    if prev is not None and type(prev) is not str:
        raise DecodeError('invalid "prev"')
    structure = _EVENT_STRUCTURERS.get(kind)
    if structure is None:
        cls = EVENT_CLASSES.get(kind)
        if cls is None:
            payload = {k: v for k, v in data.items() if k not in _ENVELOPE}
            return seq, prev, UnknownEvent(type=kind, ts=data["ts"], data=payload)
        structure = _EVENT_STRUCTURERS[kind] = _structurer(cls)
    try:
        return seq, prev, structure(data)
    except _Invalid as exc:
        raise DecodeError(f"invalid {kind}: {exc.reason} @ ${exc.path}") from None


_ENVELOPE = frozenset({"type", "seq", "ts", "prev"})


def decode_line(line: bytes) -> WireLine:
    """Parse and type one line (without its newline); DecodeError says what is wrong."""
    return WireLine(*decode_wire(load_line(line)))
