"""Format versions: a file's header says its version; lines of an older one are rewritten
to the current one on read (upcast).

Each upcaster turns one line's JSON object of version N into version N+1. The reader
applies the chain from the file's version (from its TranscriptStarted) up to
FORMAT_VERSION to every line before typing it; the bytes on disk, and so the `prev`
chain, are never touched.

Version 2 added the agent-run events and optional fields (an agent run's `task`, a call's
`toolUseId`); every version-1 line is already a valid version-2 line, so its step is the
identity. A later version registers its step here and keeps reading older files forever.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mini_harness.errors import DecodeError, HeaderError, TranscriptFormatError
from mini_harness.events import FORMAT_VERSION, TRANSCRIPT_FORMAT, JsonObject, TranscriptStarted
from mini_harness.transcripts.codec import BOM, decode_wire, load_line, with_hint

Upcaster = Callable[[JsonObject], JsonObject]


class Upcasters:
    """A registry of one-step upcasters, keyed by the version they read."""

    def __init__(self, current: int = FORMAT_VERSION) -> None:
        self.current = current
        self._steps: dict[int, Upcaster] = {}

    def __repr__(self) -> str:
        return f"<Upcasters(current={self.current}, from={sorted(self._steps)})>"

    def register(self, from_version: int, step: Upcaster) -> None:
        """Register the step that turns a `from_version` line into a `from_version + 1` line."""
        if from_version >= self.current:
            raise ValueError(f"version {from_version} is not older than {self.current}")
        self._steps[from_version] = step

    def chain(self, version: int) -> Upcaster | None:
        """The function that brings a `version` line to the current version (a step's
        failure is the line's DecodeError).

        None if the version is current (nothing to do); raises LookupError if the version is
        newer, or naming the first missing step if an older version cannot be brought up.
        """
        if version == self.current:
            return None
        if version > self.current:
            raise LookupError(version)
        steps = []
        for step_from in range(version, self.current):
            step = self._steps.get(step_from)
            if step is None:
                raise LookupError(step_from)
            steps.append(step)

        def upcast(data: JsonObject) -> JsonObject:
            data = dict(data)  # a step may change the object it is given
            try:
                for step in steps:
                    data = step(data)
            except Exception as exc:  # an upcaster's failure is this line's failure, not ours
                raise DecodeError(f"cannot upcast from format version {version}: {exc!r}") from None
            return data

        return upcast


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """Version 2 only added event types and optional fields: a v1 line reads as it is."""
    return data


UPCASTERS = Upcasters()
"""The registry readers use by default."""
UPCASTERS.register(1, _v1_to_v2)


NO_VERSION = "line 1 has no format version"


def read_header(body: bytes, upcasters: Upcasters = UPCASTERS) -> Upcaster | None:
    """Check that line 1 (without its newline) is a TranscriptStarted of a version readers
    take; return the upcaster its file's lines need (None for the current version)."""
    try:
        data = load_line(body)
    except DecodeError as exc:
        raise HeaderError(f"line 1: {with_hint(str(exc), body)}") from None
    version = data.get("version")
    if data.get("type") != "TranscriptStarted" or data.get("format") != TRANSCRIPT_FORMAT:
        raise HeaderError("line 1 is not TranscriptStarted")
    if type(version) is not int:
        raise HeaderError(NO_VERSION)
    try:
        upcast = upcasters.chain(version)
        _, _, event = decode_wire(data if upcast is None else upcast(data))
    except LookupError:
        raise HeaderError("unreadable version", version) from None
    except DecodeError as exc:
        raise HeaderError(f"line 1: {exc}") from None
    if not isinstance(event, TranscriptStarted):
        raise HeaderError("line 1 is not TranscriptStarted")
    return upcast


_HEAD_BYTES = 64 * 1024
# The start of every header line a writer makes: the envelope is never redacted.
_HEADER_START = b'{"type":"TranscriptStarted",'
_JUNK = b"\0 \t\r\n"


def check_first_line(fd: int, path: Path) -> None:
    """Before a writer appends: raise TranscriptFormatError unless the file open at `fd` may
    be appended to.

    A complete first line must be a TranscriptStarted header. Without one, the content
    may only be what a crash while creating a transcript leaves (a cut header, or NULs
    and whitespace): a torn tail, which the first append sets aside. Anything else is
    somebody's file, and is never moved aside or written to.
    """
    head = os.pread(fd, _HEAD_BYTES, 0)
    newline = head.find(b"\n")
    if newline < 0:
        fragment = head.rstrip(b"\0")
        if (
            not head.strip(_JUNK)
            or _HEADER_START.startswith(fragment)
            or (fragment.startswith(_HEADER_START) and len(head) < _HEAD_BYTES)
        ):
            return
        why = "it has no TranscriptStarted line"
    else:
        try:
            # As the readers check it: older files keep taking appends.
            read_header(head[:newline].removeprefix(BOM))
        except HeaderError as exc:
            if exc.version is not None:
                raise TranscriptFormatError(
                    str(path),
                    f"{path} uses transcript format version {exc.version}; this mini-harness "
                    f"reads and writes versions 1 to {FORMAT_VERSION}: refusing to write to it",
                ) from None
            why = exc.why if exc.why == NO_VERSION else "line 1 is not TranscriptStarted"
        else:
            return
    raise TranscriptFormatError(
        str(path), f"{path} is not a mini-harness transcript ({why}); refusing to write to it"
    )
