"""Wire format: events to JSON lines and back. Field names are camelCase on the wire.

A field whose default is None (an optional field added in a later version, such as an
agent run's `task`) is left out of the line while it is None.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import attrs
import orjson

from mini_harness.events import (
    KNOWN_EVENT_TYPES,
    Event,
    JsonObject,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
    event_type,
)

if TYPE_CHECKING:
    import cattrs

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
    cls: tuple((f.name, camel(f.name)) for f in attrs.fields(cls) if f.name != "ts")
    for cls in (*KNOWN_EVENT_TYPES, ToolError)
}
# Per class, its wire keys in order and one getter for all their values (a tuple: every
# class has at least two fields besides ts), so a line's object is built in two C calls.
_WIRE_GETTERS: dict[type, tuple[tuple[str, ...], operator.attrgetter[Any]]] = {
    cls: (tuple(key for _, key in fields), operator.attrgetter(*(attr for attr, _ in fields)))
    for cls, fields in _WIRE_FIELDS.items()
}
_ERROR_FIELDS = _WIRE_FIELDS[ToolError]
_OPTIONAL_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in attrs.fields(cls) if f.default is None) for cls in _WIRE_FIELDS
}
# Optional fields (default None) are left off a line when not set, so lines of events that
# do not use them are as they were before the fields existed.
_OPTIONAL_KEYS: dict[type, tuple[str, ...]] = {
    cls: tuple(key for attr, key in fields if attr in _OPTIONAL_FIELDS[cls])
    for cls, fields in _WIRE_FIELDS.items()
}


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
    keys, values = _WIRE_GETTERS[type(event)]
    out.update(zip(keys, values(event), strict=True))
    if type(event) is ToolFailed:
        out["error"] = _error_json(event.error)
    for key in _OPTIONAL_KEYS[type(event)]:
        if out[key] is None:
            del out[key]
    return out


# A line holds plain JSON only: bytes, lone surrogates, dataclasses, datetimes and other
# objects raise (orjson.JSONEncodeError, a TypeError) instead of being converted. NaN and
# Infinity cannot be refused without a walk; orjson writes them as null (still a valid line).
STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def refuse_non_json(obj: object) -> None:
    """orjson's `default` for a line: everything orjson does not write by itself is refused."""
    raise TypeError(f"{type(obj).__name__} is not JSON")


def encode_line(event: Event, seq: int, prev: str | None) -> bytes:
    """One compact JSON line, without the trailing newline."""
    return orjson.dumps(event_to_wire(event, seq, prev), default=refuse_non_json, option=STRICT)


def encode_wire(wire: JsonObject) -> bytes:
    """encode_line for a line's JSON object that was already built (and e.g. redacted)."""
    return orjson.dumps(wire, default=refuse_non_json, option=STRICT)


# --- decoding ---------------------------------------------------------------------


def _strict(kind: type) -> Any:
    def hook(value: object, _: object) -> object:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


def _number(value: object, _: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected number, got {type(value).__name__}")
    return float(value)


@functools.cache
def _converter() -> cattrs.Converter:
    """The cattrs converter that types every event strictly and explains what is wrong.

    Built on first use: writing never needs it, and reading needs it only for lines the
    fast decoders below do not take (so a CLI start does not import cattrs).
    """
    from cattrs.gen import make_dict_structure_fn, override
    from cattrs.preconf.orjson import make_converter

    converter = make_converter()
    converter.register_structure_hook(str, _strict(str))
    converter.register_structure_hook(int, _strict(int))
    converter.register_structure_hook(float, _number)
    for cls in (*KNOWN_EVENT_TYPES, ToolError):
        renames: dict[str, Any] = {
            f.name: override(rename=camel(f.name)) for f in attrs.fields(cls)
        }
        converter.register_structure_hook(cls, make_dict_structure_fn(cls, converter, **renames))
    return converter


_BY_NAME: dict[str, type] = {cls.__name__: cls for cls in KNOWN_EVENT_TYPES}


# --- fast decoders --------------------------------------------------------------------
# Each takes a parsed line of its type and returns the event exactly as the converter
# would, or None when anything is unusual (a wrong type, a missing key); the converter then
# decides, and words the error. Reading a long transcript spends most of its time here.


def _str_or_none(value: object) -> bool:
    return value is None or type(value) is str


def _dicts(value: object) -> tuple[JsonObject, ...] | None:
    if type(value) is list and all(type(item) is dict for item in value):
        return tuple(value)
    return None


def _duration(value: object) -> float | None:
    if type(value) is float:
        return value
    return float(value) if type(value) is int else None


def _fast_called(data: JsonObject) -> Event | None:
    try:
        ts, run_id, call_id, name = data["ts"], data["runId"], data["callId"], data["name"]
        tool_input = data["input"]
    except KeyError:
        return None
    if not (type(ts) is str and type(run_id) is str and type(call_id) is str and type(name) is str):
        return None
    if "toolUseId" in data or "step" in data:  # an agent run's call
        tool_use_id, step = data.get("toolUseId"), data.get("step")
        if not (_str_or_none(tool_use_id) and (step is None or type(step) is int)):
            return None
        return ToolCalled(ts, run_id, call_id, name, tool_input, tool_use_id=tool_use_id, step=step)
    return ToolCalled(ts, run_id, call_id, name, tool_input)


def _fast_succeeded(data: JsonObject) -> Event | None:
    try:
        ts, run_id, call_id, name = data["ts"], data["runId"], data["callId"], data["name"]
        output, duration = data["output"], data["durationMs"]
    except KeyError:
        return None
    if type(duration) is not float:
        if type(duration) is not int:
            return None
        duration = float(duration)
    if "effects" in data:  # rare: the converter checks and types them
        return None
    if type(ts) is str and type(run_id) is str and type(call_id) is str and type(name) is str:
        return ToolSucceeded(ts, run_id, call_id, name, output, duration)
    return None


def _fast_error(data: object) -> ToolError | None:
    if type(data) is not dict:
        return None
    kind, message = data.get("kind"), data.get("message")
    path, kind_of_type = data.get("path"), data.get("type")
    violations = data.get("violations")
    if not (
        type(kind) is str
        and type(message) is str
        and _str_or_none(path)
        and _str_or_none(kind_of_type)
    ):
        return None
    if violations is not None:
        violations = _dicts(violations)
        if violations is None:
            return None
    return ToolError(kind, message, path, kind_of_type, violations)


def _fast_failed(data: JsonObject) -> Event | None:
    ts, run_id, call_id, name = data["ts"], data.get("runId"), data.get("callId"), data.get("name")
    duration = _duration(data.get("durationMs"))
    error = _fast_error(data.get("error"))
    if (
        type(ts) is str
        and type(run_id) is str
        and type(call_id) is str
        and type(name) is str
        and duration is not None
        and error is not None
    ):
        return ToolFailed(ts, run_id, call_id, name, error, duration)
    return None


def _fast_run(data: JsonObject) -> Event | None:
    ts, run_id, harness = data["ts"], data.get("runId"), data.get("harness")
    tools = _dicts(data.get("tools"))
    if "task" in data or "model" in data:  # an agent run: the converter checks its fields
        return None
    if type(ts) is str and type(run_id) is str and type(harness) is str and tools is not None:
        return RunStarted(ts, run_id, harness, tools)
    return None


def _fast_header(data: JsonObject) -> Event | None:
    ts, fmt, version = data["ts"], data.get("format"), data.get("version")
    transcript_id = data.get("transcriptId")
    if type(ts) is str and type(fmt) is str and type(version) is int and type(transcript_id) is str:
        return TranscriptStarted(ts, format=fmt, version=version, transcript_id=transcript_id)
    return None


_FAST: dict[str, Any] = {
    "ToolCalled": _fast_called,
    "ToolSucceeded": _fast_succeeded,
    "ToolFailed": _fast_failed,
    "RunStarted": _fast_run,
    "TranscriptStarted": _fast_header,
}


class WireLine(NamedTuple):
    """A decoded line: its envelope (seq, prev) and its event (a tuple: one per line read)."""

    seq: int
    prev: str | None
    event: Event


def parse_line(line: bytes) -> JsonObject:
    """Parse one line to its JSON object, checking the envelope every event has."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON ({exc})") from None
    # Exact type checks: orjson only makes plain types, and `type() is` is the fast test.
    if type(data) is not dict:
        raise DecodeError("not a JSON object")
    if type(data.get("type")) is not str:
        raise DecodeError('missing "type"')
    seq = data.get("seq")
    if type(seq) is not int or seq < 0:
        raise DecodeError('missing or invalid "seq"')
    if type(data.get("ts")) is not str:
        raise DecodeError('missing or invalid "ts"')
    prev = data.get("prev")
    if prev is not None and type(prev) is not str:
        raise DecodeError('invalid "prev"')
    return data


def wire_to_event(data: JsonObject) -> Event:
    """The typed event of a parsed line; unknown types become UnknownEvent."""
    kind = data["type"]
    fast = _FAST.get(kind)
    if fast is not None:
        decoded: Event | None = fast(data)
        if decoded is not None:
            return decoded
    cls = _BY_NAME.get(kind)
    if cls is None:
        payload = {k: v for k, v in data.items() if k not in {"type", "seq", "ts", "prev"}}
        return UnknownEvent(type=kind, ts=data["ts"], data=payload)
    import cattrs

    try:
        event: Event = _converter().structure(data, cls)
    except Exception as exc:  # cattrs raises exception groups; render them as one line
        problems = (
            "; ".join(cattrs.transform_error(exc))
            if isinstance(exc, cattrs.BaseValidationError)
            else str(exc)
        )
        raise DecodeError(f"invalid {kind}: {problems}") from None
    return event


def decode_line(line: bytes) -> WireLine:
    """Parse and type one line; DecodeError says what is wrong with it.

    A well-formed line of a known type is checked and typed in one pass; anything else
    takes parse_line + wire_to_event, which word the error.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON ({exc})") from None
    if type(data) is dict:
        kind, seq, prev = data.get("type"), data.get("seq"), data.get("prev")
        if (
            type(kind) is str
            and type(seq) is int
            and seq >= 0
            and type(data.get("ts")) is str
            and (prev is None or type(prev) is str)
        ):
            fast = _FAST.get(kind)
            event = fast(data) if fast is not None else None
            if event is not None:
                return WireLine(seq, prev, event)
    data = parse_line(line)
    return WireLine(seq=data["seq"], prev=data.get("prev"), event=wire_to_event(data))


# --- the fast path: field checks on parsed objects, without building typed events --------


def _need(data: JsonObject, kind: str, key: str, types: tuple[type, ...]) -> None:
    if key not in data:
        raise DecodeError(f"invalid {kind}: required field missing @ $.{key}")
    if types and type(data[key]) not in types:
        raise DecodeError(f"invalid {kind}: wrong type @ $.{key}")


_STR = (str,)
_NUMBER = (int, float)
_ANY: tuple[type, ...] = ()


def check_fields(data: JsonObject) -> None:
    """Raise DecodeError unless a parsed known event has its fields with the right JSON types.

    The raw reader's stand-in for structuring a typed event: the same verdict for every line
    a writer can produce, at a fraction of the cost.
    """
    kind = data["type"]
    required = _REQUIRED.get(kind)
    if required is None:
        return
    for key, types in required:
        _need(data, kind, key, types)
    if kind == "ToolFailed":
        error = data["error"]
        if type(error.get("kind")) is not str or type(error.get("message")) is not str:
            raise DecodeError(f"invalid {kind}: error needs a kind and a message @ $.error")


def parse_raw(line: bytes) -> JsonObject:
    """parse_line and check_fields in one, tuned for the lines writers produce.

    One expression accepts a well-formed call event (nearly every line of a big
    transcript); anything else goes through parse_line and check_fields, which accept the
    same lines and say exactly what is wrong with the others.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON ({exc})") from None
    if type(data) is dict:
        get = data.get
        kind = get("type")
        seq = get("seq")
        prev = get("prev")
        if (
            type(seq) is int
            and seq >= 0
            and type(get("ts")) is str
            and (prev is None or type(prev) is str)
            and type(get("runId")) is str
            and type(get("callId")) is str
            and type(get("name")) is str
        ):
            if kind == "ToolCalled":
                if "input" in data:
                    return data
            elif kind == "ToolSucceeded":
                if "output" in data and type(get("durationMs")) in _NUMBER:
                    return data
            elif kind == "ToolFailed":
                error = get("error")
                if (
                    type(get("durationMs")) in _NUMBER
                    and type(error) is dict
                    and type(error.get("kind")) is str
                    and type(error.get("message")) is str
                ):
                    return data
    data = parse_line(line)
    check_fields(data)
    return data


_Fields: TypeAlias = tuple[tuple[str, tuple[type, ...]], ...]
_CALL: _Fields = (("runId", _STR), ("callId", _STR), ("name", _STR))
_REQUIRED: dict[str, _Fields] = {
    "TranscriptStarted": (("transcriptId", _STR),),
    "RunStarted": (("runId", _STR), ("harness", _STR), ("tools", (list,))),
    "ToolCalled": (*_CALL, ("input", _ANY)),
    "ToolSucceeded": (*_CALL, ("output", _ANY), ("durationMs", _NUMBER)),
    "ToolFailed": (*_CALL, ("durationMs", _NUMBER), ("error", (dict,))),
    "ModelRequested": (
        ("runId", _STR),
        ("step", (int,)),
        ("requestId", _STR),
        ("messages", (list,)),
        ("params", (dict,)),
        ("requestHash", _STR),
    ),
    "ModelResponded": (
        ("runId", _STR),
        ("requestId", _STR),
        ("message", (dict,)),
        ("finishReason", _STR),
        ("usage", (dict,)),
        ("durationMs", _NUMBER),
    ),
    "ModelFailed": (
        ("runId", _STR),
        ("requestId", _STR),
        ("error", (dict,)),
        ("attempt", (int,)),
        ("durationMs", _NUMBER),
    ),
    "ContextTrimmed": (("runId", _STR), ("step", (int,)), ("replaced", (list,))),
    "RunFinished": (("runId", _STR), ("stopReason", _STR), ("steps", (int,)), ("usage", (dict,))),
}
