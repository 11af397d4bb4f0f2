"""Events: what dispatch and approval record. Plain values; the transcript layer gives them
`seq` and `prev`. The sinks that need no file are here too: NullSink and MemorySink."""

from __future__ import annotations

import os
import threading
import time
from typing import ClassVar, Protocol, TypeAlias, get_args

from mini_harness.events.conversation import (
    CallOrigin,
    ImportSource,
    Message,
    ModelFailure,
    ModelIdentity,
    ProjectRules,
    ReplacedMessage,
    RunOrigin,
    RunSettings,
    RunWorkspace,
    ToolDefinition,
    Usage,
)
from mini_harness.events.jsonvalue import JsonObject, JsonValue
from mini_harness.events.wire import Declared, identifies

TRANSCRIPT_FORMAT = "mini-harness.transcript"
FORMAT_VERSION = 2
"""2 added the agent-run events (the model events below) and optional fields; 1 is upcast."""


class KnownEvent(Declared, frozen=True, tag_field="type", tag=True):
    """The base of the event types of this version: on the wire, `type` is the class's name
    (what the one decoder, transcripts/fields.py, picks the class by)."""


class ToolError(Declared, frozen=True):
    """Why a call failed: `kind` is one of unknown_tool, invalid_input, handler_error,
    timeout, cancelled, invalid_output, interrupted and denied; `message` is what a person
    reads."""

    kind: str
    message: str
    path: str | None = None
    type: str | None = None
    violations: tuple[JsonObject, ...] | None = None


class FileEffect(Declared, frozen=True):
    """One file a call changed: its workspace-relative path and the hex sha256 of its bytes
    before and after the call (None: the file did not exist)."""

    path: str
    before: str | None
    after: str | None


class TranscriptStarted(KnownEvent, frozen=True, kw_only=True):
    """The first line of every transcript file."""

    ts: str
    format: str = TRANSCRIPT_FORMAT
    version: int = FORMAT_VERSION
    transcript_id: str


class RunStarted(KnownEvent, frozen=True):
    """One run (a CLI invocation, an API session) begins; `tools` snapshots the definitions.

    An agent run also records its `task`, `model`, `system_prompt`, the `project_rules` it
    loaded and `max_steps`; a tool run leaves them out (None is not written). An agent run
    that continues another names it: `resumed_from` (`mini-harness resume`) or
    `forked_from` (`fork`, or an offline replay going on with a live model). A run that
    acts on a history that does not verify (resume, fork, undo with `--allow-unverified`)
    lists the problems verify found in `unverified`. A run decided by an approval policy
    records `policy_sha256`, the SHA-256 of the policy file it read when it started (of no
    bytes when the workspace has none). An agent run started from the command line also
    records its `workspace` (path, git HEAD and branch) and its `settings` (approval mode,
    context budget, sandbox requirement).

    A run imported from another agent's session file (`mini-harness import`) records where
    it came from in `imported`; a subagent's run names the run and step that started it
    in `spawned_by`. A run that reverts a call (`mini-harness undo`) names it in `undoes`.
    """

    ts: str
    run_id: str
    harness: str
    tools: tuple[ToolDefinition, ...]
    task: str | None = None
    model: ModelIdentity | None = None
    system_prompt: str | None = None
    project_rules: tuple[ProjectRules, ...] | None = None
    max_steps: int | None = None
    resumed_from: RunOrigin | None = None
    forked_from: RunOrigin | None = None
    unverified: tuple[str, ...] | None = None
    policy_sha256: str | None = None
    workspace: RunWorkspace | None = None
    settings: RunSettings | None = None
    imported: ImportSource | None = None
    spawned_by: RunOrigin | None = None
    undoes: CallOrigin | None = None


class ToolCalled(KnownEvent, frozen=True):
    """A dispatch began; recorded before validation and before the handler runs."""

    ts: str
    run_id: str
    call_id: str
    name: str
    input: JsonValue
    # In an agent run: the model's id for the call and the step that made it.
    tool_use_id: str | None = None
    step: int | None = None

    wire_rules: ClassVar = {"tool_use_id": identifies("toolCall")}


class ToolSucceeded(KnownEvent, frozen=True):
    """A dispatch ended with a JSON output."""

    ts: str
    run_id: str
    call_id: str
    name: str
    output: JsonValue
    duration_ms: int | float
    # The files the call changed. Omitted from the line when None, so lines of calls that
    # change nothing are as before.
    effects: tuple[FileEffect, ...] | None = None


class ToolFailed(KnownEvent, frozen=True):
    """A dispatch ended without an output; `error.kind` says why."""

    ts: str
    run_id: str
    call_id: str
    name: str
    error: ToolError
    duration_ms: int | float


class ApprovalRequested(KnownEvent, frozen=True):
    """A person was asked whether a call may run; `shown` is exactly what they saw.

    `rule` names the policy rule that asked.
    """

    ts: str
    run_id: str
    call_id: str
    name: str
    rule: str
    shown: str


class ApprovalDecided(KnownEvent, frozen=True):
    """Whether a call may run: `decision` is approved, approved_for_session or denied.

    `by` is "policy" (then `rule` names the rule) or "user"; `reason` is what the model is
    told when the call was denied.
    """

    ts: str
    run_id: str
    call_id: str
    name: str
    decision: str
    by: str
    rule: str | None = None
    reason: str | None = None


# --- model events: what an agent run records of its requests and how it ended ---
#
# A run's requests are rebuilt from these alone: the first `ModelRequested` holds the whole
# opening conversation, every later one only the messages added since the previous request
# (the assistant message as it went into the history, then its tool results), and
# `ContextTrimmed` says which earlier messages the budget replaced and with what. Each
# request's `requestHash` lets a reader check the rebuild.


class ModelRequested(KnownEvent, frozen=True):
    """A model request is about to be sent (recorded before it is).

    `messages` are the messages added to the conversation since this run's previous
    request (all of them for step 1); `params` the request's parameters;
    `request_hash` the SHA-256 of the canonical full request (messages, tools, params).
    """

    ts: str
    run_id: str
    step: int
    request_id: str
    messages: tuple[Message, ...]
    params: JsonObject
    request_hash: str


class ModelResponded(KnownEvent, frozen=True):
    """The model answered `request_id`: the assistant `message` (its tool calls with the
    model's ids and raw argument text), the finish reason, usage and timing."""

    ts: str
    run_id: str
    request_id: str
    message: Message
    finish_reason: str
    usage: Usage
    duration_ms: int | float
    response_id: str | None = None


class ModelFailed(KnownEvent, frozen=True):
    """One attempt at `request_id` failed, and why (`error`). A retried attempt and the
    final failure each get one."""

    ts: str
    run_id: str
    request_id: str
    error: ModelFailure
    attempt: int
    duration_ms: int | float


class ContextTrimmed(KnownEvent, frozen=True):
    """Before step `step`'s request, the budget replaced the earlier messages `replaced`.
    `tokens_before` / `tokens_after` are the request's estimates, `budget` the limit.
    """

    ts: str
    run_id: str
    step: int
    replaced: tuple[ReplacedMessage, ...]
    tokens_before: int
    tokens_after: int
    budget: int


class RunFinished(KnownEvent, frozen=True):
    """An agent run ended: `stop_reason` is final, max_steps, model_error, budget,
    cancelled, or interrupted (closed by repair after its process died); `final_text` the
    answer (null without one), `steps` the model requests made,
    `usage` the summed token counts."""

    ts: str
    run_id: str
    stop_reason: str
    final_text: str | None
    steps: int
    usage: Usage


class UnknownEvent(Declared, frozen=True):
    """An event of a type this version does not know (same major format): kept, not fatal."""

    type: str
    ts: str
    data: JsonObject


# The one registry of event types: a new event is a KnownEvent subclass (its fields,
# snake_case, are the wire keys in camelCase) added to this union. Readers and writers derive
# everything else from it (see transcripts/codec.py).
Event: TypeAlias = (
    TranscriptStarted
    | RunStarted
    | ToolCalled
    | ToolSucceeded
    | ToolFailed
    | ApprovalRequested
    | ApprovalDecided
    | ModelRequested
    | ModelResponded
    | ModelFailed
    | ContextTrimmed
    | RunFinished
    | UnknownEvent
)
KNOWN_EVENT_TYPES: tuple[type, ...] = tuple(
    cls for cls in get_args(Event) if cls is not UnknownEvent
)


def event_type(event: Event) -> str:
    """The wire name of an event (its class name, or the recorded name of an unknown one)."""
    return event.type if isinstance(event, UnknownEvent) else type(event).__name__


# --- ids and clocks ----------------------------------------------------------

# The second last formatted and its text, replaced as one tuple: a thread never pairs one
# second's text with another's microseconds.
_ts_cache: tuple[int, str] = (-1, "")
_time_ns = time.time_ns


def utc_timestamp() -> str:
    """UTC now as ISO 8601 with microseconds and Z, e.g. 2026-01-02T03:04:05.123456Z."""
    global _ts_cache  # noqa: PLW0603 - a one-entry cache of the formatted second
    second, ns = divmod(_time_ns(), 1_000_000_000)
    cached = _ts_cache
    if second != cached[0]:
        cached = _ts_cache = (second, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second)))
    # str(...)[1:] zero-pads the microseconds: a format spec (:06d) costs several times more.
    return f"{cached[1]}{str(ns // 1000 + 1_000_000)[1:]}Z"


def new_id() -> str:
    """A random 128-bit id as 32 hex digits."""
    return os.urandom(16).hex()


class EventSink(Protocol):
    """Where the runtime sends events, one event object at a time.

    Emitting must be durable per the sink's own policy; a sink that cannot record an event
    raises, and the runtime does not act on a call it could not record.
    """

    def emit(self, event: Event) -> None: ...


class NullSink:
    """Discards events: dispatch without a log."""

    def emit(self, event: Event) -> None:
        return None


class MemorySink:
    """Keeps events in a list, header included, as a transcript file holds them: an
    event's index in `events` is the `seq` a file gives it."""

    def __init__(self) -> None:
        self.transcript_id = new_id()
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemorySink(transcript_id={self.transcript_id!r}, events={len(self._events)})>"

    def emit(self, event: Event) -> None:
        with self._lock:
            if not self._events and not isinstance(event, TranscriptStarted):
                self._events.append(
                    TranscriptStarted(ts=event.ts, transcript_id=self.transcript_id)
                )
            self._events.append(event)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> list[Event]:
        """The events emitted so far, header included, in order."""
        return list(self._events)
