"""Repair a transcript: quarantine a torn tail, optionally close in-doubt calls.

Repair only ever appends to a transcript or cuts a tail it has first copied aside
(`<log>.torn-<offset>`, fsynced); it never rewrites or drops a line in the middle.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from mini_harness.errors import TranscriptError
from mini_harness.events import (
    FORMAT_VERSION,
    RunFinished,
    ToolError,
    ToolFailed,
    utc_timestamp,
)
from mini_harness.transcripts.log_fold import OpenCall, UnfinishedRun
from mini_harness.transcripts.reader import STDIN
from mini_harness.transcripts.tail import Quarantined
from mini_harness.transcripts.verify import VerifyReport, verify_transcript
from mini_harness.transcripts.writer import JsonlTranscript

INTERRUPTED_STOP = "interrupted"
"""The stop reason repair records for an agent run the process left without RunFinished."""

INTERRUPTED_MESSAGE = (
    "Tool {name} was interrupted: the process ended before the call finished "
    "(closed by `mini-harness transcript repair`)"
)


@attrs.frozen
class RepairReport:
    """What repair did, and the verify report of the file afterwards."""

    quarantined: tuple[Quarantined, ...]
    closed: tuple[OpenCall, ...]
    refused: str | None
    after: VerifyReport
    ended: tuple[UnfinishedRun, ...] = ()  # agent runs closed as interrupted


def repair_transcript(
    path: str | os.PathLike[str], *, close_in_doubt: bool = False
) -> RepairReport:
    """Quarantine a torn tail; with `close_in_doubt`, append `ToolFailed{kind: interrupted}`
    for each call that has no terminal event, then `RunFinished{stopReason: interrupted}`
    (its steps and usage so far) for each agent run that has none. A run closed so can
    still be resumed.

    Run it only when no process is writing the transcript: a call that is still running
    looks exactly like an in-doubt one. Mid-file damage is left alone (`refused` says so).
    Raises TranscriptError if the file cannot be read as a transcript.
    """
    log = Path(path)
    if os.fspath(path) == STDIN or (log.exists() and not log.is_file()):
        shown = "standard input" if os.fspath(path) == STDIN else str(log)
        raise TranscriptError(
            str(log),
            f"cannot repair {shown}: it is not a regular file (repair writes to the "
            "transcript; a pipe or a device cannot be cut or appended to): copy it to a file "
            "and repair the copy",
        )
    if not log.is_file():
        raise TranscriptError(str(log), f"cannot read transcript {log}: no such file")
    before = verify_transcript(log)  # refuses what is not a transcript before we touch it
    if before.damaged:
        first = before.damaged[0]
        refusal = (
            f"line {first.line} (byte {first.offset}) is damaged and valid lines follow it; "
            "repair never rewrites the middle of a transcript: restore it from a copy, or keep "
            "it as is (readers that salvage skip damaged lines)"
        )
        return RepairReport((), (), refusal, before)
    # No header (an empty file, or one cut while its first line was written): nothing has
    # a version yet, and the writer refuses content that is not a cut header on its own.
    if before.version is not None and before.version != FORMAT_VERSION:
        refusal = (
            f"it is of format version {before.version}; repair appends version "
            f"{FORMAT_VERSION} events only to files of that version"
        )
        return RepairReport((), (), refusal, before)
    closed: list[OpenCall] = []
    ended: tuple[UnfinishedRun, ...] = ()
    with JsonlTranscript(log, fsync="always") as writer:
        quarantined = writer.recover()
        if close_in_doubt:
            for call in verify_transcript(log).in_doubt:
                writer.append(
                    ToolFailed(
                        ts=utc_timestamp(),
                        run_id=call.run_id,
                        call_id=call.call_id,
                        name=call.name,
                        error=ToolError(
                            kind="interrupted", message=INTERRUPTED_MESSAGE.format(name=call.name)
                        ),
                        # Unknown: the run ended without measuring it; never derived from ts.
                        duration_ms=0.0,
                    )
                )
                closed.append(call)
            ended = verify_transcript(log).unfinished_runs
            for run in ended:
                writer.append(
                    RunFinished(
                        ts=utc_timestamp(),
                        run_id=run.run_id,
                        stop_reason=INTERRUPTED_STOP,
                        final_text=None,
                        steps=run.steps,
                        usage=run.usage,
                    )
                )
    return RepairReport(
        tuple(quarantined), tuple(closed), None, verify_transcript(log), tuple(ended)
    )
