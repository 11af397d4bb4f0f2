"""The events layer: the vocabulary every other layer speaks, declared once.

Every event type and the payloads it carries (the conversation: messages, tool calls,
usage, ...; tool definitions, file effects), the JSON value types, the one encoder of
them all (`to_wire`), the sink protocol (`emit(event)`) and the clock and id helpers.
Nothing here does I/O.
"""

from __future__ import annotations

from mini_harness.errors import NotJsonError
from mini_harness.events.conversation import (
    Message,
    ModelFailure,
    ModelIdentity,
    ProjectRules,
    ReplacedMessage,
    Role,
    RunOrigin,
    ToolAnnotations,
    ToolCall,
    ToolDefinition,
    Usage,
)
from mini_harness.events.jsonvalue import MAX_JSON_DEPTH, JsonObject, JsonValue, check_json
from mini_harness.events.vocabulary import (
    FORMAT_VERSION,
    KNOWN_EVENT_TYPES,
    TRANSCRIPT_FORMAT,
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    EventSink,
    FileEffect,
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
from mini_harness.events.wire import to_wire

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
    "FileEffect",
    "JsonObject",
    "JsonValue",
    "Message",
    "ModelFailed",
    "ModelFailure",
    "ModelIdentity",
    "ModelRequested",
    "ModelResponded",
    "NotJsonError",
    "NullSink",
    "ProjectRules",
    "ReplacedMessage",
    "Role",
    "RunFinished",
    "RunOrigin",
    "RunStarted",
    "ToolAnnotations",
    "ToolCall",
    "ToolCalled",
    "ToolDefinition",
    "ToolError",
    "ToolFailed",
    "ToolSucceeded",
    "TranscriptStarted",
    "UnknownEvent",
    "Usage",
    "check_json",
    "event_type",
    "new_id",
    "to_wire",
    "utc_timestamp",
]
