"""Violation: one way an input breaks its tool's schema."""

from __future__ import annotations

import attrs

from mini_harness.events import JsonObject


@attrs.frozen
class Violation:
    """One way the input breaks the schema: where (`echo.items[0]`), which keyword, what."""

    path: str
    keyword: str
    message: str

    @property
    def full_message(self) -> str:
        return f"Invalid input for {self.path}: {self.message}"

    def to_json(self) -> JsonObject:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}
