"""A transcript's history in one call, for readers that want it whole."""

from __future__ import annotations

import os

from mini_harness.events import ApprovalDecided
from mini_harness.replay.history.calls import Call, CallList
from mini_harness.replay.history.fold import TranscriptFold
from mini_harness.replay.history.runs import History, Run


def read_history(
    path: str | os.PathLike[str],
    *,
    run: str | None = None,
    requests: bool = False,
    detail: bool = False,
    damage: bool = False,
) -> History:
    """Read a transcript once into its history (see TranscriptFold for the options).

    Raises a TranscriptError if the file cannot be read, ReplayError if `run` names no
    run or several.
    """
    return TranscriptFold(path, run=run, requests=requests, detail=detail, damage=damage).read()


def fold_transcript(
    path: str | os.PathLike[str], *, run: str | None = None, requests: bool = True
) -> History:
    """Fold a transcript into its history, holding every call of the runs shown in
    `calls` (compactly: see CallList), in the order they ended, calls in doubt last.
    Agent runs' requests are rebuilt unless `requests` is False.

    Raises a TranscriptError if the file cannot be read, ReplayError if `run` names no
    run or several.
    """
    fold = TranscriptFold(path, run=run, requests=requests)
    calls = CallList(item for item in fold if type(item) is Call)
    fold.history.calls = calls
    return fold.history


def fold_agent_runs(path: str | os.PathLike[str], *, run: str | None = None) -> list[Run]:
    """The agent runs of a transcript, in the order they started, each with its steps
    and their requests rebuilt (tool runs are passed over); with `run`, only the run it
    names, if that is an agent run. Raises a TranscriptError if the file cannot be read,
    ReplayError if `run` names no run or several."""
    return read_history(path, run=run, requests=True).agent_runs()


def fold_effects(path: str | os.PathLike[str]) -> tuple[list[Call], list[ApprovalDecided]]:
    """The calls that changed files (with their `effects`), in the order they ended, and
    every approval decision, in file order. Raises a TranscriptError if the file cannot
    be read."""
    fold = TranscriptFold(path)
    calls = [item for item in fold if type(item) is Call and item.effects]
    return calls, fold.history.decisions
