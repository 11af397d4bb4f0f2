"""The transcript layer: the JSONL wire format, its writer and its reader."""

from __future__ import annotations

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
