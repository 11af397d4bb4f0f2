"""The transcript layer: the JSONL wire format, its writer and its reader.

Names are imported on first use: a CLI run that only appends to a log never loads the
reader or the protocol checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._lazy import lazy_exports

if TYPE_CHECKING:
    from mini_harness.transcripts.codec import (
        DecodeError,
        decode_line,
        encode_line,
        event_to_wire,
        line_hash,
    )
    from mini_harness.transcripts.limits import DEFAULT_MAX_EVENT_BYTES, is_omitted
    from mini_harness.transcripts.protocol import CallProtocol, OpenCall, ProtocolProblem
    from mini_harness.transcripts.quarantine import Quarantined
    from mini_harness.transcripts.reader import (
        DamagedLine,
        IntegrityProblem,
        RawRecord,
        TornTail,
        TranscriptReader,
        TranscriptRecord,
        read_transcript,
    )
    from mini_harness.transcripts.redaction import REDACTED, Redactor
    from mini_harness.transcripts.repair import RepairReport, repair_transcript
    from mini_harness.transcripts.upcast import UPCASTERS, Upcasters
    from mini_harness.transcripts.verify import VerifyReport, verify_transcript
    from mini_harness.transcripts.writer import (
        DEFAULT_FSYNC,
        FSYNC_MODES,
        FsyncMode,
        JsonlTranscript,
    )

_WHERE = {
    "codec": ("DecodeError", "decode_line", "encode_line", "event_to_wire", "line_hash"),
    "limits": ("DEFAULT_MAX_EVENT_BYTES", "is_omitted"),
    "protocol": ("CallProtocol", "OpenCall", "ProtocolProblem"),
    "reader": (
        "DamagedLine",
        "IntegrityProblem",
        "RawRecord",
        "TornTail",
        "TranscriptReader",
        "TranscriptRecord",
        "read_transcript",
    ),
    "redaction": ("REDACTED", "Redactor"),
    "repair": ("RepairReport", "repair_transcript"),
    "upcast": ("UPCASTERS", "Upcasters"),
    "verify": ("VerifyReport", "verify_transcript"),
    "writer": ("DEFAULT_FSYNC", "FSYNC_MODES", "FsyncMode", "JsonlTranscript"),
    "quarantine": ("Quarantined",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "DEFAULT_FSYNC",
    "DEFAULT_MAX_EVENT_BYTES",
    "FSYNC_MODES",
    "REDACTED",
    "UPCASTERS",
    "CallProtocol",
    "DamagedLine",
    "DecodeError",
    "FsyncMode",
    "IntegrityProblem",
    "JsonlTranscript",
    "OpenCall",
    "ProtocolProblem",
    "Quarantined",
    "RawRecord",
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


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals())
