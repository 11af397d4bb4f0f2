"""File effects: what a call changed on disk, recorded in its ToolSucceeded.

A handler that changes files returns `WithEffects(output, effects)`; dispatch records the
output as usual and the effects beside it, each path with the sha256 of its bytes before
and after the call (None for a file that was absent).
"""

from __future__ import annotations

import hashlib

import attrs

from mini_harness.events import JsonObject, JsonValue


def sha256_of(data: bytes | None) -> str | None:
    """The hex sha256 of a file's bytes, or None for a file that does not exist."""
    return None if data is None else hashlib.sha256(data).hexdigest()


@attrs.frozen
class FileEffect:
    """One path a call changed: its sha256 before and after (None: absent)."""

    path: str
    before: str | None
    after: str | None

    def to_json(self) -> JsonObject:
        return {"path": self.path, "before": self.before, "after": self.after}


@attrs.frozen
class WithEffects:
    """A handler's output together with the file effects dispatch records for it."""

    output: JsonValue
    effects: tuple[FileEffect, ...]
