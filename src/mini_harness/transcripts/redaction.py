"""Redaction: secret values replaced by `[REDACTED]` before a line is encoded and written."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from mini_harness.errors import RedactionError
from mini_harness.events import JsonObject
from mini_harness.transcripts.codec import ENVELOPE

REDACTED = "[REDACTED]"


@attrs.frozen
class Redactor:
    """Replaces secret values and pattern matches in every string of an event.

    Build it with `Redactor.from_config`; `secrets` are literal values (e.g. read from
    environment variables), `patterns` regular expressions. Keys and values of nested
    objects are redacted alike; numbers and booleans are left alone.
    """

    secrets: tuple[str, ...]
    patterns: tuple[str, ...]
    _regex: re.Pattern[str] | None = attrs.field(repr=False)

    @classmethod
    def from_config(
        cls,
        *,
        env_names: Iterable[str] = (),
        patterns: Iterable[str] = (),
        secrets: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> Redactor:
        """Read the values of `env_names` now.

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
        return cls(tuple(sorted(values)), tuple(checked), regex)

    @property
    def active(self) -> bool:
        """False when there is nothing to redact (then writers skip redaction entirely)."""
        return self._regex is not None

    def redact_text(self, text: str) -> str:
        if self._regex is None:
            return text
        return self._regex.sub(REDACTED, text)

    def redact_wire(self, wire: JsonObject) -> JsonObject:
        """A copy of one line's JSON object with every payload string redacted (never the
        envelope: a secret equal to a type name or a hash must not break the line or chain)."""
        return {
            key: value if key in ENVELOPE else self._value(value) for key, value in wire.items()
        }

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return self._object(value)
        if isinstance(value, list | tuple):
            return [self._value(item) for item in value]
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
            out[key] = self._value(item)
        return out
