"""The transcript layer: the JSONL wire format, its writer and its reader.

The reader, verify, repair and signed heads load when first used: a command that only writes a log
does not import them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._exports import lazy_names
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
from mini_harness.transcripts.writer import DEFAULT_FSYNC, JsonlTranscript

if TYPE_CHECKING:
    from mini_harness.transcripts.log_fold import CallProtocol
    from mini_harness.transcripts.note import Note, SignerKey, VerifierKey
    from mini_harness.transcripts.reader import (
        MAX_LINE_BYTES,
        TornTail,
        TranscriptReader,
        TranscriptRecord,
        read_transcript,
    )
    from mini_harness.transcripts.repair import RepairReport, repair_transcript
    from mini_harness.transcripts.signing import (
        TrustedKeys,
        note_path_for,
        sign_transcript,
        verify_signed,
    )
    from mini_harness.transcripts.upcast import Upcasters
    from mini_harness.transcripts.verify import VerifyReport, damage_read, verify_transcript
else:  # type checkers see the names above; at run time they are imported on first use
    __getattr__ = lazy_names(
        __name__,
        {
            "mini_harness.transcripts.reader": (
                "MAX_LINE_BYTES",
                "TornTail",
                "TranscriptReader",
                "TranscriptRecord",
                "read_transcript",
            ),
            "mini_harness.transcripts.note": ("Note", "SignerKey", "VerifierKey"),
            "mini_harness.transcripts.repair": ("RepairReport", "repair_transcript"),
            "mini_harness.transcripts.signing": (
                "TrustedKeys",
                "note_path_for",
                "sign_transcript",
                "verify_signed",
            ),
            "mini_harness.transcripts.upcast": ("Upcasters",),
            "mini_harness.transcripts.log_fold": ("CallProtocol",),
            "mini_harness.transcripts.verify": (
                "VerifyReport",
                "damage_read",
                "verify_transcript",
            ),
        },
    )

__all__ = [
    "DEFAULT_FSYNC",
    "DEFAULT_MAX_EVENT_BYTES",
    "MAX_LINE_BYTES",
    "REDACTED",
    "CallProtocol",
    "DecodeError",
    "JsonlTranscript",
    "Note",
    "Redactor",
    "RepairReport",
    "SignerKey",
    "TornTail",
    "TranscriptReader",
    "TranscriptRecord",
    "TrustedKeys",
    "Upcasters",
    "VerifierKey",
    "VerifyReport",
    "damage_read",
    "decode_line",
    "encode_line",
    "event_to_wire",
    "is_omitted",
    "line_hash",
    "note_path_for",
    "read_transcript",
    "repair_transcript",
    "sign_transcript",
    "verify_signed",
    "verify_transcript",
]
