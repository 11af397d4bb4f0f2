"""Spans as plain values, before any OpenTelemetry SDK sees them: what they are called,
where they sit in their trace, when they began and ended, what they say.

Their ids come from the transcript, never from a random source: a run's trace id is its
run id (128 bits), a span's id a hash of what it stands for (the run, a model request, a
call). Exporting a transcript twice gives the same spans, so a collector that
deduplicates stores them once. Times are the recorded timestamps.
"""

from __future__ import annotations

import calendar
import datetime
import hashlib
from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias

import attrs

AttributeValue: TypeAlias = str | bool | int | float | tuple[str, ...]
"""What an attribute holds: a string, a boolean, a number, or a list of strings (structured
content, such as messages, goes in as its JSON text)."""

Attributes: TypeAlias = Mapping[str, AttributeValue]

SpanKind: TypeAlias = Literal["INTERNAL", "CLIENT"]
StatusCode: TypeAlias = Literal["UNSET", "ERROR"]

_HEX32 = frozenset("0123456789abcdef")


@attrs.frozen
class SpanEvent:
    """Something that happened during a span: a failed attempt, a trimmed context."""

    name: str
    time_ns: int
    attributes: Attributes = attrs.Factory(dict)


@attrs.frozen
class SpanLink:
    """A span of another trace this one continues (a resumed or forked run's origin)."""

    trace_id: int
    span_id: int
    attributes: Attributes = attrs.Factory(dict)


@attrs.frozen
class SpanData:
    """One span: its name and kind, its ids (`parent_id` None for a trace's root), its
    times in nanoseconds since the epoch, attributes, events, links and status."""

    name: str
    kind: SpanKind
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Attributes = attrs.Factory(dict)
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()
    status: StatusCode = "UNSET"
    status_message: str | None = None

    def redacted(self, redact: Callable[[str], str]) -> SpanData:
        """The span with `redact` applied to every string it carries but its name (a span's
        name is the operation and the model or tool: never content)."""
        return attrs.evolve(
            self,
            attributes=_redacted(self.attributes, redact),
            events=tuple(
                attrs.evolve(event, attributes=_redacted(event.attributes, redact))
                for event in self.events
            ),
            links=tuple(
                attrs.evolve(link, attributes=_redacted(link.attributes, redact))
                for link in self.links
            ),
            status_message=None if self.status_message is None else redact(self.status_message),
        )


def _redacted(attributes: Attributes, redact: Callable[[str], str]) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            out[key] = redact(value)
        elif isinstance(value, tuple):
            out[key] = tuple(redact(item) for item in value)
        else:
            out[key] = value
    return out


def trace_id(run_id: str) -> int:
    """The trace id of run `run_id`: the run id itself when it is 128 bits of hex (every
    run id mini-harness makes), else the first 128 bits of its SHA-256 (a run id of a
    forked child process, or of an API user's choosing)."""
    if len(run_id) == 32 and _HEX32.issuperset(run_id) and int(run_id, 16):
        return int(run_id, 16)
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:16], "big") or 1


def span_id(*parts: str) -> int:
    """The span id of what `parts` name (("run", run id), ("request", run id, request id),
    ...): the first 64 bits of their SHA-256, never 0 (an invalid id)."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def time_ns(ts: str) -> int:
    """A recorded timestamp (`2026-01-02T03:04:05.123456Z`) in nanoseconds since the epoch,
    exactly (no float on the way)."""
    moment = datetime.datetime.fromisoformat(ts)
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    seconds = calendar.timegm(moment.timetuple())
    return seconds * 1_000_000_000 + moment.microsecond * 1_000
