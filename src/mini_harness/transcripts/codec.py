"""The wire format: events to JSON lines and back (field names are camelCase on the wire);
the per-event size cap, under which a value too large for a line becomes a marker; and
redaction, which replaces secret values by `[REDACTED]` before a line is encoded."""

from __future__ import annotations

import hashlib
import os
import re
import string
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Union

import attrs
import msgspec
import orjson

from mini_harness.errors import DecodeError, RedactionError
from mini_harness.events import (
    KNOWN_EVENT_TYPES,
    MAX_JSON_DEPTH,
    Event,
    JsonObject,
    UnknownEvent,
    redaction,
)
from mini_harness.events.jsonvalue import TOO_DEEP, nested_deeper_than, nested_too_deep
from mini_harness.events.wire import Encoder, encoder
from mini_harness.transcripts.fields import decoder, field_error

BOM = b"\xef\xbb\xbf"
"""A UTF-8 byte order mark, which other tools put before line 1: not part of the line."""
HASH_HEX_DIGITS = 32
"""`prev` is the first 128 bits of SHA-256 of the previous line, in lowercase hex."""
_sha256 = hashlib.sha256
HASH_BYTES = HASH_HEX_DIGITS // 2


def line_hash(line: bytes) -> str:
    """The hash the next line carries in `prev`: over the exact bytes, without the newline."""
    # digest().hex() of the first half is the same text as hexdigest()[:32], and faster.
    return _sha256(line).digest()[:HASH_BYTES].hex()


# Per event class, its name and the encoder of its fields but ts (events/wire.py: generated
# from the declaration, nested payloads included), so a line's object is the envelope and
# one call. Each is made when the first event of its class is written: a command pays
# only for the events it writes.
_WIRE: dict[type, tuple[str, Encoder]] = {}
_KNOWN = frozenset(KNOWN_EVENT_TYPES)


def event_to_wire(event: Event, seq: int, prev: str | None) -> JsonObject:
    """The JSON object of one line: type, seq, ts, prev (all but the first line), payload."""
    cls: type = type(event)
    found = _WIRE.get(cls)
    if found is None and cls in _KNOWN:
        found = _WIRE[cls] = (cls.__name__, encoder(cls, frozenset({"ts"})))
    if found is None:  # an UnknownEvent: its payload as it was read
        unknown: Any = event
        out: JsonObject = {"type": unknown.type, "seq": seq, "ts": unknown.ts}
        if prev is not None:
            out["prev"] = prev
        for key, value in unknown.data.items():
            out.setdefault(key, value)
        return out
    name, encode = found
    out = {"type": name, "seq": seq, "ts": event.ts}
    if prev is not None:
        out["prev"] = prev
    return encode(event, out)


# A line holds plain JSON only: bytes, lone surrogates, dataclasses, datetimes and other
# objects raise (orjson.JSONEncodeError, a TypeError) instead of being converted. NaN and
# Infinity cannot be refused without a walk; orjson writes them as null (still a valid line).
STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def refuse_non_json(obj: object) -> None:
    """orjson's `default` for a line: everything orjson does not write by itself is refused."""
    raise TypeError(f"{type(obj).__name__} is not JSON")


def encode_line(event: Event, seq: int, prev: str | None) -> bytes:
    """One compact JSON line, without the trailing newline."""
    return encode_wire(event_to_wire(event, seq, prev))


def encode_wire(wire: JsonObject) -> bytes:
    """encode_line for a line's JSON object that was already built (and e.g. redacted)."""
    return orjson.dumps(wire, default=refuse_non_json, option=STRICT)


DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024
"""4 MiB per line: far above any sensible tool result, far below what breaks line readers."""

OMITTED_KEY = "$omitted"
MESSAGE_KEEP_CHARS = 1000


def is_omitted(value: object) -> bool:
    """True for a marker written in place of an oversize value."""
    return isinstance(value, dict) and OMITTED_KEY in value and "sha256" in value


def omitted_marker(encoded: bytes, cap: int) -> JsonObject:
    """What stands in for a value whose compact JSON encoding is `encoded`."""
    return {
        OMITTED_KEY: f"value over the {cap}-byte event size cap",
        "bytes": len(encoded),
        "sha256": hashlib.sha256(encoded).hexdigest(),
    }


def shrink_wire(wire: JsonObject, cap: int) -> bool:
    """Replace the large payload of one line's JSON object in place; False if it has none.

    ToolCalled's `input` and ToolSucceeded's `output` become a marker carrying the size and
    SHA-256 of their compact JSON; a ToolFailed `error` keeps its kind and the start of its
    message; a tool name over MESSAGE_KEEP_CHARS keeps its start. Other events have no
    payload that may be dropped.
    """
    shrunk = False
    for key in ("input", "output"):
        if key in wire and wire["type"] in {"ToolCalled", "ToolSucceeded"}:
            wire[key] = omitted_marker(orjson.dumps(wire[key]), cap)
            shrunk = True
    name = wire.get("name")
    if isinstance(name, str) and len(name) > MESSAGE_KEEP_CHARS:
        # A tool name that long was never registered (the call fails as unknown_tool), but
        # its call is recorded all the same: the name keeps its start and says its size.
        size = len(name.encode("utf-8", "surrogatepass"))
        wire["name"] = (
            f"{name[:MESSAGE_KEEP_CHARS]} [... name of {size} bytes cut: over the {cap}-byte "
            "event size cap]"
        )
        shrunk = True
    error = wire.get("error")
    if wire["type"] == "ToolFailed" and isinstance(error, dict):
        size = len(orjson.dumps(error))
        message = str(error.get("message", ""))[:MESSAGE_KEEP_CHARS]
        kept: JsonObject = {
            "kind": error.get("kind"),
            "message": f"{message} [... error of {size} bytes cut: over the {cap}-byte "
            "event size cap]",
        }
        kept.update({k: error[k] for k in ("path", "type") if k in error})
        wire["error"] = kept
        shrunk = True
    return shrunk


ENVELOPE = frozenset({"type", "seq", "ts", "prev"})
"""The keys every line has (prev on all but the first), whatever its event."""
EVENT_CLASSES: dict[str, type] = {cls.__name__: cls for cls in KNOWN_EVENT_TYPES}
"""Event types by wire name: the classes of `mini_harness.events.Event`."""


class WireLine(NamedTuple):
    """A decoded line: its envelope (seq, prev) and its event."""

    seq: int
    prev: str | None
    event: Event


class _Envelope(msgspec.Struct):
    """A line's envelope as it is, checked by `_checked` (the rest of the line is skipped)."""

    type: Any = None
    seq: Any = None
    ts: Any = None
    prev: Any = None


_decode_envelope = decoder(_Envelope).decode
_decode_event = decoder(Union[KNOWN_EVENT_TYPES]).decode  # tagged by `type`  # noqa: UP007


def load_line(line: bytes) -> JsonObject:
    """Parse one line (without its newline) to its JSON object; DecodeError if it is not one.

    A line whose values nest deeper than MAX_JSON_DEPTH is refused as such. Only a line
    with more than that many `[` and `{` bytes can, so only those are walked.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        # orjson stops at 1024 levels: the line's own object is one level more than its values.
        if nested_deeper_than(line.decode("utf-8", "replace"), MAX_JSON_DEPTH + 1):
            raise DecodeError(TOO_DEEP) from None
        raise DecodeError(f"not JSON ({exc})") from None
    if type(data) is not dict:
        raise DecodeError("not a JSON object")
    if _deep(line) and nested_too_deep(data, MAX_JSON_DEPTH + 1):
        raise DecodeError(TOO_DEEP)
    return data


def _deep(line: bytes) -> bool:
    """Whether the line may nest deeper than MAX_JSON_DEPTH: it has more `[` and `{` bytes
    than that (a shorter line cannot)."""
    return len(line) > MAX_JSON_DEPTH and line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH


# A line's shape for the two things msgspec does not check as orjson does: every digit is
# 0 and every { is [, so that one pass counts the brackets (nesting) and finds a run of 20
# digits (a number that may be beyond 64 bits: orjson reads it as a float, as lines have
# always been read, where msgspec would keep an integer no JSON writer here can write).
_SHAPE = bytes.maketrans(b"123456789{", b"000000000[")
_LONG_NUMBER = b"0" * 20


def _checked(kind: Any, seq: Any, ts: Any, prev: Any) -> None:
    """The one check of the envelope every line has (type, seq, ts, prev)."""
    if type(kind) is not str:
        raise DecodeError('missing "type"')
    if type(seq) is not int or seq < 0:
        raise DecodeError('missing or invalid "seq"')
    if type(ts) is not str:
        raise DecodeError('missing or invalid "ts"')
    if prev is not None and type(prev) is not str:
        raise DecodeError('invalid "prev"')


def decode_line(line: bytes) -> WireLine:
    """Parse and type one line (without its newline); DecodeError says what is wrong.

    The one decoder of lines: msgspec reads the envelope, then the event straight into its
    declared class (transcripts/fields.py); unknown types become UnknownEvent. A line that
    does not parse, or may nest too deep, is parsed by `load_line` first, which says why.
    """
    return WireLine(*decode_parts(line))


def decode_parts(line: bytes) -> tuple[int, str | None, Event]:
    """decode_line's (seq, prev, event) as a plain tuple, for the readers' loops."""
    shape = line.translate(_SHAPE)
    if shape.count(b"[") > MAX_JSON_DEPTH or _LONG_NUMBER in shape:
        # Nested deep enough to be refused before msgspec recurses into it, or holding a
        # number to be read as orjson reads it: the line is parsed as an object first.
        return decode_wire(load_line(line))
    try:
        envelope = _decode_envelope(line)
    except msgspec.DecodeError as exc:
        raise _not_json(line, exc) from None
    kind, seq, prev = envelope.type, envelope.seq, envelope.prev
    # _checked, inlined for the common case: a well-formed envelope
    if not (
        type(kind) is str
        and type(seq) is int
        and seq >= 0
        and type(envelope.ts) is str
        and (prev is None or type(prev) is str)
    ):
        _checked(kind, seq, envelope.ts, prev)
    if kind not in EVENT_CLASSES:
        return seq, prev, _unknown(kind, envelope.ts, load_line(line))
    try:
        return seq, prev, _decode_event(line)
    except msgspec.ValidationError as exc:
        if str(exc).startswith("Number out of range"):  # 1e400: not JSON to orjson
            raise _not_json(line, exc) from None
        raise _invalid(kind, EVENT_CLASSES[kind], exc) from None
    except msgspec.DecodeError as exc:  # the envelope's reading skipped the payload
        raise _not_json(line, exc) from None


def _not_json(line: bytes, exc: msgspec.DecodeError) -> DecodeError:
    """Why msgspec could not parse `line`, as `load_line` says it (not JSON, not an
    object); msgspec's own words for what orjson takes."""
    try:
        load_line(line)
    except DecodeError as said:
        return said
    return DecodeError(f"not JSON ({exc})")


def decode_wire(data: JsonObject) -> tuple[int, str | None, Event]:
    """(seq, prev, event) of a parsed line (one upcast from an older format): the checks
    and typing of `decode_line`, from its JSON object."""
    kind: Any = data.get("type")
    seq: Any = data.get("seq")
    prev: Any = data.get("prev")
    ts: Any = data.get("ts")
    _checked(kind, seq, ts, prev)
    cls = EVENT_CLASSES.get(kind)
    if cls is None:
        return seq, prev, _unknown(kind, ts, data)
    try:
        return seq, prev, msgspec.convert(data, cls, strict=True)
    except msgspec.ValidationError as exc:
        raise _invalid(kind, cls, exc) from None


def _unknown(kind: str, ts: str, data: JsonObject) -> UnknownEvent:
    payload = {k: v for k, v in data.items() if k not in ENVELOPE}
    return UnknownEvent(type=kind, ts=ts, data=payload)


def _invalid(kind: str, cls: type, exc: msgspec.ValidationError) -> DecodeError:
    problem = field_error(cls, exc)
    return DecodeError(f"invalid {kind}: {problem.reason} @ ${problem.path}")


def with_hint(reason: str, body: bytes) -> str:
    """Say so when a bad line looks like a piece of pretty-printed JSON."""
    stripped = body.strip()
    if reason.startswith("not JSON") and (
        stripped in {b"{", b"[", b"}", b"]", b"},", b"],"} or body[:1] in {b" ", b"\t"}
    ):
        return (
            f"{reason}; it looks like pretty-printed JSON, but a transcript holds one compact "
            "JSON object per line"
        )
    return reason


REDACTED = redaction.REDACTED


@attrs.frozen
class Redactor:
    """Replaces secret values and pattern matches in every string of an event.

    Build it with `Redactor.from_config`; `secrets` are literal values (e.g. read from
    environment variables), `patterns` regular expressions, and API keys are found also
    when written a little differently (events/redaction.py). Keys and values of nested
    objects are redacted alike; numbers and booleans are left alone.
    """

    secrets: tuple[str, ...]
    patterns: tuple[str, ...]
    _regex: re.Pattern[str] | None = attrs.field(repr=False)
    _keys: redaction.KeyFinder | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_config(
        cls,
        *,
        env_names: Iterable[str] = (),
        patterns: Iterable[str] = (),
        secrets: Iterable[str] = (),
        keys: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> Redactor:
        """Read the values of `env_names` now; `keys` are API keys, whose copies are
        redacted too.

        An unset or empty variable raises RedactionError: redacting nothing silently would
        send the secret a typo'd name was meant to hide to disk.
        """
        env = os.environ if environ is None else environ
        values = {s for s in secrets if s}
        for name in env_names:
            value = env.get(name)
            if not value:
                state = "not set" if value is None else "set but empty"
                raise RedactionError(f"--redact-env {name}: the variable is {state}")
            values.add(value)
        checked: list[str] = []
        for pattern in patterns:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise RedactionError(
                    f"--redact-pattern {pattern!r} is not a valid regex: {exc}"
                ) from None
            if compiled.fullmatch(""):
                raise RedactionError(
                    f"--redact-pattern {pattern!r} matches the empty string; it would redact "
                    "between every character"
                )
            checked.append(pattern)
        # Longest secrets first, so that a secret containing another is replaced whole.
        alternatives = [re.escape(s) for s in sorted(values, key=len, reverse=True)]
        alternatives += [f"(?:{p})" for p in checked]
        regex = re.compile("|".join(alternatives)) if alternatives else None
        return cls(tuple(sorted(values)), tuple(checked), regex, redaction.KeyFinder.of(keys))

    @property
    def active(self) -> bool:
        """False when there is nothing to redact (then writers skip redaction entirely)."""
        return self._regex is not None or self._keys is not None

    def stream(self, held: str, chunk: str) -> tuple[str, str]:
        """Streamed text, as it arrives: `held`, what was held back so far, and the new
        `chunk`. Returns what can be shown now, redacted, and what to hold back until the
        next chunk, because a secret may still be completing in it.

        A secret, and a copy of a key, lies within a run of its own characters (letters,
        digits, `-`, `_` and what else it holds): what comes before the last character
        outside every such run is settled. With a pattern, or a secret that holds
        whitespace, only whole lines are.
        """
        characters = redaction.key_characters(self.secrets)
        if self._keys is not None:
            characters |= self._keys.characters
        # What is held back has no settled end of its own: only the new chunk can have one.
        if self.patterns or not characters.isdisjoint(string.whitespace):
            end = chunk.rfind("\n") + 1
        else:
            ends = (end for end in range(len(chunk), 0, -1) if chunk[end - 1] not in characters)
            end = next(ends, 0)
        text = held + chunk
        if not end:
            return "", text
        cut = len(held) + end
        return self.redact_text(text[:cut]), text[cut:]

    def redact_text(self, text: str) -> str:
        if self._keys is not None:
            text = self._keys.redact(text)
        if self._regex is None:
            return text
        return self._regex.sub(REDACTED, text)

    def redact_wire(self, wire: JsonObject) -> JsonObject:
        """A copy of one line's JSON object with every payload string redacted (never the
        envelope: a secret equal to a type name or a hash must not break the line or chain)."""
        return {
            key: value if key in ENVELOPE else self.redact_value(value)
            for key, value in wire.items()
        }

    def redact_value(self, value: Any) -> Any:
        """A JSON value with every string in it redacted (object keys too, see `_object`)."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return self._object(value)
        if isinstance(value, list | tuple):
            return [self.redact_value(item) for item in value]
        return value

    def _object(self, value: dict[str, Any]) -> dict[str, Any]:
        """Redact an object's keys and values; keys that became equal are numbered
        (`[REDACTED-2]`, ...) so that no value is dropped."""
        keys = [self.redact_text(k) for k in value]
        taken = {new for old, new in zip(value, keys, strict=True) if new == old}
        out: dict[str, Any] = {}
        for (old, item), new in zip(value.items(), keys, strict=True):
            key = new
            number = 1
            while new != old and key in taken:
                number += 1
                head, marker, tail = new.rpartition(REDACTED)
                key = f"{head}[REDACTED-{number}]{tail}" if marker else f"{new}-{number}"
            taken.add(key)
            out[key] = self.redact_value(item)
        return out
