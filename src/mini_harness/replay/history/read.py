"""A transcript's history in one call, for readers that want it whole."""

from __future__ import annotations

import os
from collections.abc import Iterator

from mini_harness.events import ApprovalDecided
from mini_harness.replay.history.calls import Call, CallList
from mini_harness.replay.history.fold import FoldItem, TranscriptFold
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


class HeldItems:
    """The items of a fold (runs as they started, calls as they ended), held to be gone
    through again once the whole file is read: the calls compactly (a CallList), so a
    transcript read once, from a pipe, can still be re-run call by call."""

    def __init__(self) -> None:
        self._calls = CallList()
        self._runs: list[tuple[int, Run]] = []  # each run, and how many calls came before it

    def __repr__(self) -> str:
        return f"<HeldItems(runs={len(self._runs)}, calls={len(self._calls)})>"

    def add(self, item: FoldItem) -> None:
        if isinstance(item, Run):
            self._runs.append((len(self._calls), item))
        else:
            self._calls.append(item)

    def __iter__(self) -> Iterator[FoldItem]:
        runs = iter(self._runs)
        pending = next(runs, None)
        for index, call in enumerate(self._calls):
            while pending is not None and pending[0] <= index:
                yield pending[1]
                pending = next(runs, None)
            yield call
        while pending is not None:
            yield pending[1]
            pending = next(runs, None)
