"""Location: a workspace path that was checked, resolved and stat'ed (Workspace.locate)."""

from __future__ import annotations

import attrs


@attrs.frozen
class Location:
    """A checked path: as given, normalised ("." for the root), resolved, and its stat."""

    given: str
    relative: str
    real: str
    mode: int
    size: int
