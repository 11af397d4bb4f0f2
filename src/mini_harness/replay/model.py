"""The timeline's way of naming a run (until it reads the history)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from mini_harness.errors import ReplayError, counted


def names_run(wanted: str | None, index: int, run_id: str) -> bool:
    """Whether `--run WANTED` names run `index` (1-based, in file order) `run_id`: all
    digits is an index, anything else a run id or its prefix (None and "" name none). The
    first run of a file it names is the one selected."""
    if not wanted:
        return False
    if wanted.isdigit():
        return index == int(wanted)
    return run_id.startswith(wanted)


def no_run_error(
    path: str | os.PathLike[str], wanted: str, runs: Sequence[tuple[int, str]]
) -> ReplayError:
    """`t.jsonl has no run 9 (it has 2 runs: 1 <id>, 2 <id>)`: `runs` (index and id) listed
    up to ten."""
    listing = ", ".join(f"{index} {run_id}" for index, run_id in runs[:10])
    more = f", and {len(runs) - 10} more" if len(runs) > 10 else ""
    has = f"it has {counted(len(runs), 'run')}: {listing}{more}" if runs else "it has no runs"
    shown = wanted or '""'
    return ReplayError(f"{path} has no run {shown} ({has})")
