"""Transcripts as a table: one flat row per event, every column of one type.

A transcript's lines are not one table as they stand: a tool's `output` is an array on one
line and an object on the next, and fields appear only on some event types, so polars'
`read_ndjson` refuses the file and DuckDB's sampling misses fields that come late. A row
here has the same columns whatever the event: the envelope and the fields most queries
group by (`type`, `runId`, `callId`, `name`, `step`, `errorKind`, `durationMs`), each a
string, a number or null, and the whole event as compact JSON text in `event`, for the
JSON functions of the engine that reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import orjson

from mini_harness.events import JsonObject
from mini_harness.transcripts.codec import event_to_wire
from mini_harness.transcripts.reader import TranscriptReader

COLUMNS: Final = (
    "file", "line", "seq", "ts", "type", "runId", "callId", "name", "step", "errorKind",
    "durationMs", "event",
)  # fmt: skip
"""The columns of every row, in order."""


def event_rows(reader: TranscriptReader) -> Iterator[JsonObject]:
    """One row per event `reader` reads (see the module), the file named as it was given."""
    for record in reader:
        event = record.event
        wire = event_to_wire(event, record.seq, record.prev)
        error = getattr(event, "error", None)
        duration = getattr(event, "duration_ms", None)
        yield {
            "file": reader.name,
            "line": record.line,
            "seq": record.seq,
            "ts": event.ts,
            "type": str(wire["type"]),
            "runId": getattr(event, "run_id", None),
            "callId": getattr(event, "call_id", None),
            "name": getattr(event, "name", None),
            "step": getattr(event, "step", None),
            "errorKind": getattr(error, "kind", None),
            "durationMs": None if duration is None else float(duration),  # never 0 beside 0.5
            "event": orjson.dumps(wire).decode(),
        }
