"""Acting on history only when it verifies: `resume`, `fork` and `undo` check first.

They re-run, continue or revert what a transcript says happened, so the transcript must
be the one that was written: the same check as `mini-harness transcript verify`
(transcripts/verify.py). What a crash leaves (calls, requests and runs in doubt, a torn
tail) is what resume is for; anything else (an edited, duplicated, moved or damaged line,
a broken call protocol) refuses the command, unless `--allow-unverified` says to go on,
which the new run records (`RunStarted.unverified`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from mini_harness.cli.options import F
from mini_harness.cli.output import warn
from mini_harness.errors import UsageError, counted
from mini_harness.transcripts import verify_transcript

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
    problems = verify_transcript(path).damage()
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
