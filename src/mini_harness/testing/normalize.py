"""Turning volatile values into stable placeholders, so that goldens only change on purpose.

Transcripts are normalized field by field and re-chained, so a golden transcript is itself
a valid transcript; text is normalized with regular expressions.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast, get_args, get_type_hints

import attrs
import orjson

from mini_harness.errors import DecodeError, NormalizationError
from mini_harness.events import KNOWN_EVENT_TYPES
from mini_harness.events.wire import camel, declared, fields, identified
from mini_harness.transcripts.codec import line_hash, load_line

TS_PLACEHOLDER = "2000-01-01T00:00:00.000000Z"
"""Every `ts` in a golden transcript: a valid timestamp that is obviously not a real one."""

DURATION_PLACEHOLDER = 0
HARNESS_PLACEHOLDER = "<harness>"

IdFields = dict[str, "str | IdFields"]
"""Where an event's ids are: each wire key that holds one, with what it identifies, and
each key holding declared values (or arrays of them) with where theirs are."""


@functools.cache
def id_fields(cls: type) -> IdFields:
    """Where the ids of a `cls` value are, derived from its declaration: every field that
    is an id (events/wire.py `identified`: `run_id`, `request_id`, `ToolCall.id`, ...), at
    any depth of the declared classes it holds. A field added to the vocabulary is covered
    as soon as it is declared."""
    hints = get_type_hints(cls)
    found: IdFields = {}
    for field in fields(cls):
        kind = identified(cls, field)
        inner = None if kind is not None else _declared(hints[field.name])
        where = kind if inner is None else id_fields(inner)
        if where:
            found[camel(field.name)] = where
    return found


def _declared(tp: Any) -> type | None:
    """The declared class a field annotated `tp` holds (alone, optional or in a tuple)."""
    if declared(tp):
        return cast(type, tp)
    inner = [_declared(arg) for arg in get_args(tp) if arg is not type(None) and arg is not ...]
    found = [arg for arg in inner if arg is not None]
    return found[0] if len(found) == 1 else None


# Ids differ on every run: numbered per kind in order of first appearance, so that "the
# second call of the first run" stays readable. A line of a type this version does not
# know has its ids where any event has them.
EVENT_IDS: dict[str, IdFields] = {cls.__name__: id_fields(cls) for cls in KNOWN_EVENT_TYPES}
ANY_EVENT_IDS: IdFields = {
    key: kind for ids in EVENT_IDS.values() for key, kind in ids.items() if isinstance(kind, str)
}

_TEXT_TS = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
_TEXT_DURATION = re.compile(r'("durationMs":\s*)-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')
_TEXT_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
_TEXT_CALL_ID = re.compile(r"\b[0-9a-f]{12}-\d+\b")  # `<12 hex of the run id, or random>-<n>`
_PREV = re.compile(r'"prev":"[^"]*"')


@attrs.frozen
class VolatileField:
    """A JSON key whose value is replaced wherever it appears in a transcript line."""

    key: str
    placeholder: str
    numbered: bool = False


@attrs.frozen
class Normalization:
    """What counts as volatile, beyond the built-in fields. Immutable: `with_*` returns a copy.

    Built in: transcripts get `ts`, `durationMs`, `harness`, every id (`transcriptId`,
    `runId`, `callId`, `requestId`, `toolUseId`, a tool call's `id`, ...: whatever the
    event classes declare as one, see `id_fields`) and `prev` replaced; text gets
    timestamps, `"durationMs":N`, 32-hex-digit ids and call ids (`<12 hex>-<n>`) replaced.
    `paths` (longest first) and `scrubs` apply to text and to every string inside a
    transcript; `fields` (which win over the built-in ones) to keys at any
    depth of a transcript line.
    """

    paths: tuple[tuple[str, str], ...] = ()
    scrubs: tuple[tuple[re.Pattern[str], str], ...] = ()  # (pattern, replacement)
    fields: tuple[VolatileField, ...] = ()
    hex_ids: bool = True

    def with_path(self, path: str | os.PathLike[str], placeholder: str) -> Normalization:
        """Replace `path` (and its resolved form) with `placeholder`, e.g. `<tmp>`."""
        forms = {str(path), str(Path(path).resolve())}
        added = tuple((form, placeholder) for form in sorted(forms) if form not in ("", "."))
        return attrs.evolve(self, paths=self.paths + added)

    def with_scrub(self, pattern: str | re.Pattern[str], replacement: str) -> Normalization:
        """Replace every match of `pattern` with `replacement` (`re.sub` syntax)."""
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        return attrs.evolve(self, scrubs=(*self.scrubs, (compiled, replacement)))

    def with_field(
        self, key: str, placeholder: str | None = None, *, numbered: bool = False
    ) -> Normalization:
        """Replace the value of `key` in transcripts: by `placeholder` (default `<key>`), or
        numbered `<placeholder>-1`, `-2`, ... in order of first appearance."""
        field = VolatileField(key, placeholder or (key if numbered else f"<{key}>"), numbered)
        return attrs.evolve(self, fields=(*self.fields, field))

    def without_hex_ids(self) -> Normalization:
        """Keep hex ids in text (e.g. when a tool prints MD5 digests)."""
        return attrs.evolve(self, hex_ids=False)

    # --- applying -----------------------------------------------------------------------

    def scrub_string(self, text: str) -> str:
        """Paths and user scrubs: what applies to text and to strings inside transcripts."""
        for path, placeholder in sorted(self.paths, key=lambda p: -len(p[0])):
            text = text.replace(path, placeholder)
        for pattern, replacement in self.scrubs:
            text = pattern.sub(replacement, text)
        return text

    def text(self, text: str) -> str:
        """Normalize CLI output or a report."""
        text = self.scrub_string(text)
        text = _TEXT_TS.sub("<ts>", text)
        text = _TEXT_DURATION.sub(rf"\g<1>{DURATION_PLACEHOLDER}", text)
        if self.hex_ids:
            text = _Numbering().sub_hex_ids(text)
        return text

    def transcript(self, data: bytes | str) -> bytes:
        """Normalize a JSONL transcript and recompute its `prev` chain over the new lines.

        `data` is the file's bytes, or its text (encoded as UTF-8); the result is bytes.
        Each line is parsed by the transcript codec (the reader's own parser): what it
        refuses, this refuses, with the line number.
        """
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        elif not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"Normalization.transcript() takes the transcript as bytes or str, not "
                f"{type(data).__name__}"
            )
        data = bytes(data)
        if data and not data.endswith(b"\n"):
            raise NormalizationError("the transcript does not end with a newline (torn tail?)")
        numbering = _Numbering()
        lines = []
        for number, raw in enumerate(data.splitlines(), start=1):
            try:
                line = load_line(raw)
            except DecodeError as exc:
                raise NormalizationError(f"transcript line {number} is {exc}") from None
            lines.append(self._line(line, numbering))
        if any(line.get("type") == "ModelRequested" for line in lines):
            _rehash(lines)
        return _chained(lines)

    def _line(self, line: dict[str, Any], numbering: _Numbering) -> dict[str, Any]:
        ids = EVENT_IDS.get(str(line.get("type")), ANY_EVENT_IDS)
        new: dict[str, Any] = {}
        for key, value in line.items():
            if key == "prev":
                continue
            if key == "ts":
                new[key] = TS_PLACEHOLDER
            elif key == "durationMs" and isinstance(value, int | float):
                new[key] = DURATION_PLACEHOLDER
            elif key == "harness":
                new[key] = HARNESS_PLACEHOLDER
            else:
                new[key] = self._value(key, value, numbering, ids.get(key))
        return new

    def _value(
        self, key: str | None, value: Any, numbering: _Numbering, ids: str | IdFields | None
    ) -> Any:
        """`value` normalized; `ids` says what it is the id of, or where the ids inside it
        are (None: it holds none, as a tool's input or output)."""
        for field in self.fields:  # the test's own say wins
            if field.key == key:
                if field.numbered:
                    return numbering.number(field.placeholder, orjson.dumps(value).decode())
                return field.placeholder
        if isinstance(ids, str) and isinstance(value, str):
            return numbering.number(ids, value)
        inner = ids if isinstance(ids, dict) else {}
        if isinstance(value, str):
            return self.scrub_string(value)
        if isinstance(value, dict):
            return {
                self.scrub_string(k): self._value(k, v, numbering, inner.get(k))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._value(None, item, numbering, inner or None) for item in value]
        return value


def _chained(lines: list[dict[str, Any]]) -> bytes:
    """The lines as a transcript: each line's `prev` (after its `ts`) the hash of the line
    before it."""
    out: list[bytes] = []
    prev: str | None = None
    for line in lines:
        if prev is not None:
            chained: dict[str, Any] = {}
            for key, value in line.items():
                chained[key] = value
                if key == "ts":
                    chained["prev"] = prev
            chained.setdefault("prev", prev)
            line = chained  # noqa: PLW2901 - the line as written
        encoded = orjson.dumps(line)
        out.append(encoded + b"\n")
        prev = line_hash(encoded)
    return b"".join(out)


def _rehash(lines: list[dict[str, Any]]) -> None:
    """Give each ModelRequested the `requestHash` of its request as normalized: the
    request holds the model's tool call ids, numbered now, so its hash is computed again,
    by the agent's own hasher over the request the one fold rebuilds. An offline replay of
    the golden then finds the requests it rebuilds to be the recorded ones."""
    from mini_harness.agent import request_hash
    from mini_harness.errors import TranscriptError
    from mini_harness.replay.history import read_history

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "normalized.jsonl")
        with open(path, "wb") as handle:
            handle.write(_chained(lines))
        try:
            history = read_history(path, requests=True)
        except TranscriptError as exc:
            raise NormalizationError(f"the transcript cannot be folded: {exc.message}") from None
    hashes = {
        step.requested.request_id: request_hash(step.rebuilt)
        for run in history.agent_runs()
        for step in run.steps
        if step.requested is not None and step.rebuilt is not None
    }
    for line in lines:
        if line.get("type") == "ModelRequested" and line.get("requestId") in hashes:
            line["requestHash"] = hashes[line["requestId"]]


class _Numbering:
    """Placeholders numbered per kind, in order of first appearance."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}

    def number(self, kind: str, value: str) -> str:
        placeholder = self._seen.get((kind, value))
        if placeholder is None:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            placeholder = f"{kind}-{self._counts[kind]}"
            self._seen[(kind, value)] = placeholder
        return placeholder

    def sub_hex_ids(self, text: str) -> str:
        text = _TEXT_HEX_ID.sub(lambda m: f"<{self.number('id', m.group())}>", text)
        return _TEXT_CALL_ID.sub(lambda m: f"<{self.number('call', m.group())}>", text)


def mask_prev(lines: Iterable[str]) -> list[str]:
    """Lines with `prev` hashes masked: a diff then shows only the lines that changed."""
    return [_PREV.sub('"prev":"…"', line) for line in lines]
