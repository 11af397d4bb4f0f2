"""Upcasting: lines of an older format version are rewritten to the current one on read.

Each upcaster turns one line's JSON object of version N into version N+1. The reader
applies the chain from the file's version (from its TranscriptStarted) up to
FORMAT_VERSION to every line before typing it; the bytes on disk, and so the `prev`
chain, are never touched.

Version 2 added the agent-run events and optional fields (an agent run's `task`, a call's
`toolUseId`); every version-1 line is already a valid version-2 line, so its step is the
identity. A later version registers its step here and keeps reading older files forever.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_harness.events import FORMAT_VERSION, JsonObject
from mini_harness.transcripts.codec import DecodeError

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
