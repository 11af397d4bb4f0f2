"""The one rule every `--run` and `--step` follows.

`--run` names a run by its 1-based index in the file (all digits) or by its id or a
prefix of it that no other run's id shares. Without `--run`, commands that report show
every run, and commands that continue one (resume, fork) take the last agent run of the
file. `--step N` is the N-th model request of an agent run (1-based, as the run counted
them); a step a run did not make is an error naming the steps it did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mini_harness.errors import ReplayError, counted
from mini_harness.replay.history.runs import History, Run
from mini_harness.replay.history.steps import Step

_LISTED = 10
"""How many runs an error lists (the rest are counted)."""


class RunSelection:
    """Which run `--run WANTED` names, decided as the runs of a file go by (a fold offers
    each run as it starts). The first run it names is the one shown; `check` then says
    whether WANTED named exactly one (ReplayError if none or several).

    Without `by_index`, WANTED is an id or a prefix of one even when it is all digits:
    runs of several files (the session store) have no index in common.
    """

    def __init__(self, wanted: str, *, by_index: bool = True) -> None:
        self.wanted = wanted
        self.index = int(wanted) if by_index and wanted.isdigit() else None
        self.matches: list[Run] = []

    def offer(self, run: Run) -> bool:
        """Whether `run` is named (and is the first run named)."""
        if self.index is not None:
            named = run.index == self.index
        else:
            named = bool(self.wanted) and run.run_id.startswith(self.wanted)
        if named:
            self.matches.append(run)
        return named and len(self.matches) == 1

    def check(
        self, path: str, runs: Sequence[Run], label: Callable[[Run], str] | None = None
    ) -> Run:
        """The run named, once every run of `path` has been offered; `label` says how an
        error lists a run (default: its index and id)."""
        label = label or _indexed
        if len(self.matches) == 1:
            return self.matches[0]
        if not self.matches:
            shown = self.wanted or '""'
            raise ReplayError(f"{path} has no run {shown} ({_has(runs, label)})")
        how = "the run's index" if label is _indexed else "the transcript's path"
        raise ReplayError(
            f"{path} has {len(self.matches)} runs whose id starts with {self.wanted}: "
            f"{_listing(self.matches, label)}; give more of the id, or {how}"
        )


def _indexed(run: Run) -> str:
    return f"{run.index} {run.run_id}"


def _listing(runs: Sequence[Run], label: Callable[[Run], str]) -> str:
    shown = ", ".join(label(run) for run in runs[:_LISTED])
    more = f", and {len(runs) - _LISTED} more" if len(runs) > _LISTED else ""
    return shown + more


def _has(runs: Sequence[Run], label: Callable[[Run], str]) -> str:
    if not runs:
        return "it has no runs"
    return f"it has {counted(len(runs), 'run')}: {_listing(runs, label)}"


def select_run(history: History, wanted: str) -> Run:
    """The run `wanted` names among every run of the history (see the module's rule)."""
    selection = RunSelection(wanted)
    for run in history.runs:
        selection.offer(run)
    return selection.check(history.name, history.runs)


def select_agent_run(history: History, wanted: str | None = None) -> Run:
    """The agent run `wanted` names (see `select_run`), or without it the last agent run
    of the file. ReplayError if there is none, or `wanted` names a tool run."""
    if wanted is None:
        agent_runs = [run for run in history.runs if run.is_agent]
        if not agent_runs:
            raise ReplayError(f"{history.name} has no agent run")
        return agent_runs[-1]
    run = select_run(history, wanted)
    if not run.is_agent:
        raise ReplayError(
            f"run {run.index} of {history.name} ({run.run_id}) is a tool run, not an agent run"
        )
    return run


def step_range(runs: Sequence[Run]) -> str:
    """`its steps are 1 to 4`, `it made only step 1`, `it made no model request`: the
    steps `runs` made, for errors."""
    one = len(runs) == 1
    numbers = sorted({number for run in runs for number in run.step_numbers()})
    if not numbers:
        return "it made no model request" if one else "none made a model request"
    if len(numbers) == 1:
        return f"{'it' if one else 'they'} made only step {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        span = f"{numbers[0]} to {numbers[-1]}"
    else:
        span = ", ".join(map(str, numbers))
    return f"{'its' if one else 'their'} steps are {span}"


def select_step(run: Run, number: int) -> Step:
    """Step `number` of `run` (ReplayError naming its steps when it made no such step)."""
    for step in run.steps or ():
        if step.number == number:
            return step
    raise ReplayError(f"run {run.run_id} has no step {number} ({step_range([run])})")


def check_step(path: str, runs: Sequence[Run], number: int) -> None:
    """ReplayError unless one of `runs` (of the transcript `path`) made step `number`."""
    if not any(number in run.step_numbers() for run in runs):
        where = f"run {runs[0].run_id} has no" if len(runs) == 1 else f"no run of {path} has"
        raise ReplayError(f"{where} step {number} ({step_range(runs)})")
