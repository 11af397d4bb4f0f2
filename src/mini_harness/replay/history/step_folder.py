"""The part of the fold that puts an agent run's model events into its steps: each request
with its response and failed attempts, the trims before it, and (when the fold rebuilds
them) the whole request, rebuilt from the messages each ModelRequested adds."""

from __future__ import annotations

from msgspec.structs import replace

from mini_harness.agent import ModelRequest
from mini_harness.events import ContextTrimmed, ModelFailed, ModelRequested, ModelResponded
from mini_harness.replay.history.runs import Run
from mini_harness.replay.history.steps import Step
from mini_harness.transcripts import TranscriptRecord


class StepFolder:
    """The part of the fold that puts model events into steps. With `detail`, each step
    keeps its lines as read and runs list their steps among their items."""

    def __init__(self, *, detail: bool) -> None:
        self.detail = detail
        self._asked: dict[str, Step] = {}  # request id -> its step
        self._current: dict[str, Step] = {}  # run id -> its latest step

    def step(self, run: Run, number: int, *, request: bool = False) -> Step:
        """The run's latest step if it is step `number` (and, for a request, has none
        yet), else a new step."""
        step = self._current.get(run.run_id)
        if step is None or step.number != number or (request and step.requested is not None):
            step = self._current[run.run_id] = Step(number)
            if run.items is not None:
                run.items.append(step)
        return step

    def requested(self, record: TranscriptRecord, event: ModelRequested, run: Run) -> None:
        run.requests += 1
        if not run.keeps:
            return
        step = self.step(run, event.step, request=True)
        step.requested = event
        if self.detail:
            step.records.append(record)
        if run.conversation is not None:
            run.conversation.extend(event.messages)
            step.rebuilt = ModelRequest(tuple(run.conversation), run.tools, event.params)
        run.steps.append(step)
        self._asked[event.request_id] = step

    def answered(
        self, record: TranscriptRecord, event: ModelResponded | ModelFailed, run: Run
    ) -> None:
        if not run.keeps:
            return
        step = self._asked.get(event.request_id)
        if step is None:
            if run.items is not None:
                run.items.append(record)  # an answer to no request: shown as it is
            return
        if isinstance(event, ModelResponded):
            step.response = event
        else:
            step.failures.append(event)
        if self.detail:
            step.records.append(record)

    def trimmed(self, record: TranscriptRecord, event: ContextTrimmed, run: Run) -> None:
        run.budget = event.budget
        conversation = run.conversation
        if conversation is not None:
            for entry in event.replaced:
                # A continued run trims before its first request, which records the
                # trimmed messages themselves.
                if entry.index < len(conversation):
                    trimmed = replace(conversation[entry.index], content=entry.content)
                    conversation[entry.index] = trimmed
        if self.detail:
            self.step(run, event.step).others.append(record)
