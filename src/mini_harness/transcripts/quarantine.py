"""Quarantined: a torn tail that was copied aside before it was cut off the log."""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class Quarantined:
    """A torn or garbage tail copied aside to `path` before it was cut off the log."""

    path: Path
    offset: int
    length: int
