"""Wire format v1: events to JSON lines and back. Field names are camelCase on the wire."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

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
from mini_harness.transcripts.fields import FieldError, camel, structure, structurer

_T = TypeVar("_T")

HASH_HEX_DIGITS = 32
"""`prev` is the first 128 bits of SHA-256 of the previous line, in lowercase hex."""
_sha256 = hashlib.sha256
HASH_BYTES = HASH_HEX_DIGITS // 2


class DecodeError(ValueError):
    """A line is not a valid event; the message says why."""


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


def decode_object(cls: type[_T], data: JsonObject) -> _T:
    """An instance of the attrs class `cls` from its JSON object (wire keys); DecodeError
    says which field is wrong and why, e.g. `expected a string @ $.runId`."""
    try:
        decoded: _T = structure(cls, data)
    except FieldError as exc:
        raise DecodeError(f"{exc.reason} @ ${exc.path}") from None
    return decoded


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
    structure_event = _EVENT_STRUCTURERS.get(kind)
    if structure_event is None:
        cls = EVENT_CLASSES.get(kind)
        if cls is None:
            payload = {k: v for k, v in data.items() if k not in _ENVELOPE}
            return seq, prev, UnknownEvent(type=kind, ts=data["ts"], data=payload)
        structure_event = _EVENT_STRUCTURERS[kind] = structurer(cls)
    try:
        return seq, prev, structure_event(data)
    except FieldError as exc:
        raise DecodeError(f"invalid {kind}: {exc.reason} @ ${exc.path}") from None


_ENVELOPE = frozenset({"type", "seq", "ts", "prev"})


def decode_line(line: bytes) -> WireLine:
    """Parse and type one line (without its newline); DecodeError says what is wrong."""
    return WireLine(*decode_wire(load_line(line)))
