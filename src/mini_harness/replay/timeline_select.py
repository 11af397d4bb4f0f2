"""Filters over a timeline: one run, one step, tools by name, a status, a text to find.

`--tool`, `--status` and `--grep` select items (tool calls and model turns); `--run` and
`--step` select where to look. A run or step left with nothing selected is left out.
"""

from __future__ import annotations

import attrs
import orjson

from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay.model import names_run, no_run_error
from mini_harness.replay.timeline import Call, Run, RunItem, Step, Timeline, Turn, events_of


@attrs.frozen
class Selection:
    """What to show. `run` is a 1-based index (all digits) or a run id (prefix); `grep`
    is found in call inputs, outputs and errors and in model text, ignoring case."""

    run: str | None = None
    step: int | None = None
    tools: tuple[str, ...] = ()
    status: str | None = None
    grep: str | None = None

    @property
    def narrows_items(self) -> bool:
        """Whether only some calls and turns are wanted (run-level events are then left out)."""
        return bool(self.tools) or self.status is not None or self.grep is not None

    @property
    def narrows(self) -> bool:
        return self.narrows_items or self.step is not None or self.run is not None

    def call_matches(self, call: Call) -> bool:
        if self.tools and call.name not in self.tools:
            return False
        shown = [event.get("shown") for event in call.approvals]
        return self._matches(call.status, [call.input, call.output, call.error, *shown])

    def turn_matches(self, turn: Turn) -> bool:
        arguments = [call.get("arguments") for call in turn.tool_calls]
        errors = [failure.get("error") for failure in turn.failures]
        return not self.tools and self._matches(turn.status, [turn.text, *arguments, *errors])

    def _matches(self, status: str, texts: list[JsonValue]) -> bool:
        """Whether an item that ended with `status` and holds `texts` is selected."""
        if self.status is not None and status != self.status:
            return False
        if self.grep is None:
            return True
        wanted = self.grep.casefold()
        return any(
            wanted in (text if isinstance(text, str) else orjson.dumps(text).decode()).casefold()
            for text in texts
            if text is not None
        )


def select(timeline: Timeline, selection: Selection) -> Timeline:
    """A copy of `timeline` holding only what `selection` selects.

    Raises ReplayError when `selection.run` names no run.
    """
    if not selection.narrows:
        return timeline
    roots = timeline.runs
    if selection.run is not None:
        roots = [_find_run(timeline, selection.run)]
    runs = [kept for run in roots if (kept := _prune(run, selection)) is not None]
    return attrs.evolve(timeline, runs=runs, others=[])


def _find_run(timeline: Timeline, wanted: str) -> Run:
    runs = sorted((run for run, _depth in timeline.walk()), key=lambda run: run.index)
    for run in runs:
        if names_run(wanted, run.index, run.run_id):
            return run
    raise no_run_error(timeline.path, wanted, [(run.index, run.run_id) for run in runs])


def _prune(run: Run, selection: Selection) -> Run | None:
    """The run with only the selected items (children pruned too); None if nothing is left."""
    items: list[RunItem] = []
    for item in run.items:
        if isinstance(item, Step):
            step = _prune_step(item, selection)
            if step is not None:
                items.append(step)
        elif isinstance(item, Call):
            if selection.step is None and selection.call_matches(item):
                items.append(item)
        elif selection.step is None and not selection.narrows_items:
            items.append(item)
    children = []
    if selection.run is None:
        children = [kept for child in run.children if (kept := _prune(child, selection))]
    narrowed = selection.narrows_items or selection.step is not None
    if narrowed and not items and not children:
        return None
    return attrs.evolve(run, items=items, children=children)


def _prune_step(step: Step, selection: Selection) -> Step | None:
    if selection.step is not None and step.number != selection.step:
        return None
    if not selection.narrows_items:
        return step
    turn = step.turn if step.turn is not None and selection.turn_matches(step.turn) else None
    calls = [call for call in step.calls if selection.call_matches(call)]
    if turn is None and not calls:
        return None
    return attrs.evolve(step, turn=turn, calls=calls, others=[])


def selected_events(timeline: Timeline, selection: Selection) -> list[JsonObject]:
    """The wire events of a selected timeline, in file order: the header and the runs'
    own events too unless only some items were asked for."""
    others = () if selection.narrows else timeline.others
    found = events_of((run for run, _depth in timeline.walk()), others)
    if selection.narrows_items or selection.step is not None:
        return [e for e in found if e["type"] not in {"RunStarted", "RunFinished"}]
    if selection.run is None and timeline.header is not None:
        found.insert(0, timeline.header)
    return found
