"""Filters over a timeline: one run, one step, tools by name, a status, a text to find.

A timeline is a history read with its detail. `--tool`, `--status` and `--grep` select
items (tool calls and model turns); `--run` and `--step` select where to look, by the one
rule (history/select.py). A run or step left with nothing selected is left out.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import orjson

from mini_harness.events import ApprovalRequested, JsonObject, JsonValue, RunFinished, RunStarted
from mini_harness.replay.history import (
    Call,
    History,
    Run,
    RunItem,
    Step,
    check_step,
    select_run,
)
from mini_harness.transcripts import TranscriptRecord
from mini_harness.transcripts.codec import event_to_wire


@attrs.frozen
class Selection:
    """What to show. `run` names a run by the one rule (an index or an id prefix); `step`
    is a model step (1-based); `grep` is found in call inputs, outputs and errors and in
    model text, ignoring case."""

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
        shown = [a.shown for a in call.approvals if isinstance(a, ApprovalRequested)]
        error = call.error.message if call.error is not None else None
        return self._matches(call.status, [call.input, call.output, error, *shown])

    def turn_matches(self, step: Step) -> bool:
        arguments = [call.arguments for call in step.tool_calls]
        errors = [failure.error.message for failure in step.failures]
        return not self.tools and self._matches(step.status, [step.text, *arguments, *errors])

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


def select(history: History, selection: Selection) -> History:
    """A copy of `history`'s timeline holding only what `selection` selects.

    Raises ReplayError when `selection.run` names no run or several, or no run shown
    made step `selection.step`.
    """
    if not selection.narrows:
        return history
    roots = history.roots
    if selection.run is not None:
        roots = [select_run(history, selection.run)]
    if selection.step is not None:
        check_step(history.name, roots if selection.run else history.runs, selection.step)
    runs = [kept for run in roots if (kept := _prune(run, selection)) is not None]
    return attrs.evolve(history, roots=runs, others=[])


def _prune(run: Run, selection: Selection) -> Run | None:
    """The run with only the selected items (children pruned too); None if nothing is left."""
    items: list[RunItem] = []
    for item in run.items or ():
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
    return run.pruned(items, children)


def _prune_step(step: Step, selection: Selection) -> Step | None:
    if selection.step is not None and step.number != selection.step:
        return None
    if not selection.narrows_items:
        return step
    turn = step.requested is not None and selection.turn_matches(step)
    calls = [call for call in step.calls if selection.call_matches(call)]
    if not turn and not calls:
        return None
    if turn:
        return attrs.evolve(step, calls=calls, others=[])
    return attrs.evolve(
        step, requested=None, response=None, failures=[], records=[], calls=calls, others=[]
    )


def _records(run: Run) -> Iterable[TranscriptRecord]:
    yield from run.records or ()
    for item in run.items or ():
        if isinstance(item, Step):
            yield from item.records
            yield from item.others
            for call in item.calls:
                yield from call.records or ()
        elif isinstance(item, Call):
            yield from item.records or ()
        else:
            yield item


def selected_events(history: History, selection: Selection) -> list[JsonObject]:
    """The wire events of a selected timeline, in file order, exactly as their lines hold
    them: the header and the runs' own events too unless only some items were asked for."""
    found = [record for run, _depth in history.walk() for record in _records(run)]
    if not selection.narrows:
        found += history.others
        if history.header_record is not None:
            found.append(history.header_record)
    if selection.narrows_items or selection.step is not None:
        found = [r for r in found if not isinstance(r.event, RunStarted | RunFinished)]
    found.sort(key=lambda record: record.line)
    return [event_to_wire(record.event, record.seq, record.prev) for record in found]
