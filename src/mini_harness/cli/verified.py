"""Acting on history only when it verifies: `resume`, `fork` and `undo` check first.

They re-run, continue or revert what a transcript says happened, so the transcript must
be the one that was written: the same check as `mini-harness transcript verify`
(transcripts/verify.py). What a crash leaves (calls, requests and runs in doubt, a torn
tail) is what resume is for; anything else (an edited, duplicated, moved or damaged line,
a broken call protocol) refuses the command, unless `--allow-unverified` says to go on,
which the new run records (`RunStarted.unverified`). Resume and fork check it in the one
reading of its history (`read_verified`), undo and a re-run with a separate one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import click

from mini_harness.cli.options import F
from mini_harness.cli.output import warn
from mini_harness.errors import UsageError, counted
from mini_harness.transcripts import TranscriptReader, damage_read, verify_transcript

if TYPE_CHECKING:
    from mini_harness.replay.history import History

_SHOWN = 3
"""How many problems a refusal names (verify lists them all)."""


def allow_unverified_option(func: F) -> F:
    """The `--allow-unverified` flag, passed as `allow_unverified`."""
    decorate: Callable[[F], F] = click.option(
        "--allow-unverified",
        is_flag=True,
        help="Act on the transcript even if `transcript verify` finds it edited or damaged "
        "(the new run records the problems it was told to pass over).",
    )
    return decorate(func)


def acted_on(path: str, command: str) -> None:
    """PATH must be a regular file for `command` to act on it: it is verified first (and
    a resumed or forked run is appended to it). A usage error (exit 2) otherwise, the one
    every command that acts says."""
    if path != "-" and not os.path.lexists(path):
        raise UsageError(f"cannot read transcript {path}: no such file")
    if path == "-" or not os.path.isfile(path):
        shown = "standard input" if path == "-" else path
        raise UsageError(
            f"cannot {command} from {shown}: it is not a regular file, and a transcript is "
            "verified before anything acts on what it records: save it to a file"
        )


def verified_history(path: str, command: str, *, allow: bool) -> tuple[str, ...] | None:
    """Check PATH before `command` acts on its history: a regular file (`acted_on`) that
    verifies.

    None when it verifies (calls, requests or runs in doubt and a torn tail are fine).
    Otherwise a usage error (exit 2) that says what verify found, or, when `allow`, a
    warning and the problems, for the new run to record.
    """
    acted_on(path, command)
    return _judged(path, command, verify_transcript(path).damage(), allow=allow)


@attrs.frozen
class VerifiedHistory:
    """A transcript's history for resume and fork, read once and verified in that reading:
    the `history` (agent runs' requests rebuilt), the problems `--allow-unverified` passed
    over (`unverified`, for the new run to record; None: it verifies), and where the
    events read end (`end`: a resume claims its run from there)."""

    history: History
    unverified: tuple[str, ...] | None
    end: int


def read_verified(path: str, command: str, *, allow: bool) -> VerifiedHistory:
    """PATH's history, checked as `verified_history` checks it (the same refusal), in one
    reading: the fold that builds the history checks what verify checks (damage_read).
    A line damaged mid-file is refused even with `allow`, as every reader of a history
    refuses it (TranscriptError): no history is read past it."""
    from mini_harness.replay.history import TranscriptFold, read_history

    acted_on(path, command)
    reader = TranscriptReader(path, salvage=True)  # what verify reads past, it names
    fold = TranscriptFold(path, requests=True, source=reader)
    history = fold.read()
    unverified = _judged(path, command, damage_read(reader, fold), allow=allow)
    if reader.damaged:  # allowed: read again as every reader does, which stops there
        read_history(path, requests=True)
    return VerifiedHistory(history, unverified, reader.end)


def _judged(path: str, command: str, problems: list[str], *, allow: bool) -> tuple[str, ...] | None:
    """None when verify found no `problems` in PATH; else the refusal of `command` (exit 2),
    or with `allow` a warning and the problems."""
    if not problems:
        return None
    found = f"{counted(len(problems), 'problem')}: {'; '.join(problems[:_SHOWN])}"
    if len(problems) > _SHOWN:
        found += f"; and {len(problems) - _SHOWN} more"
    if allow:
        warn(f"{path} does not verify ({found}); going on because of --allow-unverified")
        return tuple(problems)
    raise UsageError(
        f"cannot {command} from {path}: it does not verify, so what it records may not be "
        f"what happened ({found}). `mini-harness transcript verify {path}` lists every "
        "problem; --allow-unverified goes on anyway and records that it did"
    )
