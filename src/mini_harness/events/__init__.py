"""The events layer: the vocabulary every other layer speaks, declared once.

Every event type, the JSON value types events carry, the sink protocol (`emit(event)`)
and the clock and id helpers. Nothing here does I/O.
"""

from __future__ import annotations

from mini_harness.events.jsonvalue import (
    MAX_JSON_DEPTH,
    JsonObject,
    JsonValue,
    NotJsonError,
    check_json,
)
from mini_harness.events.vocabulary import (
    FORMAT_VERSION,
    KNOWN_EVENT_TYPES,
    TRANSCRIPT_FORMAT,
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    EventSink,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    NullSink,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
    event_type,
    new_id,
    utc_timestamp,
)

__all__ = [
    "FORMAT_VERSION",
    "KNOWN_EVENT_TYPES",
    "MAX_JSON_DEPTH",
    "TRANSCRIPT_FORMAT",
    "ApprovalDecided",
    "ApprovalRequested",
    "ContextTrimmed",
    "Event",
    "EventSink",
    "JsonObject",
    "JsonValue",
    "ModelFailed",
    "ModelRequested",
    "ModelResponded",
    "NotJsonError",
    "NullSink",
    "RunFinished",
    "RunStarted",
    "ToolCalled",
    "ToolError",
    "ToolFailed",
    "ToolSucceeded",
    "TranscriptStarted",
    "UnknownEvent",
    "check_json",
    "event_type",
    "new_id",
    "utc_timestamp",
]
