"""The transcript layer: the JSONL wire format, its writer and its reader.

Names are imported on first use: a CLI run that only appends to a log never loads the
reader or the protocol checker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mini_harness.transcripts.codec import (
        DecodeError,
        decode_line,
        encode_line,
        event_to_wire,
        line_hash,
    )
    from mini_harness.transcripts.protocol import CallProtocol, OpenCall, ProtocolProblem
    from mini_harness.transcripts.reader import (
        IntegrityProblem,
        TornTail,
        TranscriptReader,
        TranscriptRecord,
        read_transcript,
    )
    from mini_harness.transcripts.writer import JsonlTranscript

_WHERE = {
    "codec": ("DecodeError", "decode_line", "encode_line", "event_to_wire", "line_hash"),
    "protocol": ("CallProtocol", "OpenCall", "ProtocolProblem"),
    "reader": (
        "IntegrityProblem",
        "TornTail",
        "TranscriptReader",
        "TranscriptRecord",
        "read_transcript",
    ),
    "writer": ("JsonlTranscript",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "CallProtocol",
    "DecodeError",
    "IntegrityProblem",
    "JsonlTranscript",
    "OpenCall",
    "ProtocolProblem",
    "TornTail",
    "TranscriptReader",
    "TranscriptRecord",
    "decode_line",
    "encode_line",
    "event_to_wire",
    "line_hash",
    "read_transcript",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'mini_harness.transcripts' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mini_harness.transcripts.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
