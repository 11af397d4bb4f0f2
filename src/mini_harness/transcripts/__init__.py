"""The transcript layer: the JSONL wire format, its writer and its reader."""

from __future__ import annotations

from mini_harness.errors import DecodeError
from mini_harness.transcripts.codec import (
    DEFAULT_MAX_EVENT_BYTES,
    REDACTED,
    Redactor,
    decode_line,
    encode_line,
    event_to_wire,
    is_omitted,
    line_hash,
)
from mini_harness.transcripts.reader import (
    MAX_LINE_BYTES,
    TornTail,
    TranscriptReader,
    TranscriptRecord,
    read_transcript,
)
from mini_harness.transcripts.repair import RepairReport, repair_transcript
from mini_harness.transcripts.upcast import Upcasters
from mini_harness.transcripts.verify import CallProtocol, VerifyReport, verify_transcript
from mini_harness.transcripts.writer import DEFAULT_FSYNC, JsonlTranscript

__all__ = [
    "DEFAULT_FSYNC",
    "DEFAULT_MAX_EVENT_BYTES",
    "MAX_LINE_BYTES",
    "REDACTED",
    "CallProtocol",
    "DecodeError",
    "JsonlTranscript",
    "Redactor",
    "RepairReport",
    "TornTail",
    "TranscriptReader",
    "TranscriptRecord",
    "Upcasters",
    "VerifyReport",
    "decode_line",
    "encode_line",
    "event_to_wire",
    "is_omitted",
    "line_hash",
    "read_transcript",
    "repair_transcript",
    "verify_transcript",
]
