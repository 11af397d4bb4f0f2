"""Replay: fold a transcript back into runs, calls and context reports; re-run its calls.

A fold never calls a handler. A re-run dispatches recorded calls again against a registry
and compares outputs as JSON values.
"""

from __future__ import annotations

from mini_harness.replay.fold import TranscriptFold, fold_transcript
from mini_harness.replay.model import (
    OUTCOMES,
    CallList,
    CallRecord,
    Drift,
    FoldResult,
    LogProblem,
    RerunOutcome,
    RerunReport,
    RunInfo,
    RunSummary,
    Totals,
)
from mini_harness.replay.rerun import (
    TranscriptRerun,
    definition_drift,
    json_diff,
    json_equal,
    rerun_transcript,
)

__all__ = [
    "OUTCOMES",
    "CallList",
    "CallRecord",
    "Drift",
    "FoldResult",
    "LogProblem",
    "RerunOutcome",
    "RerunReport",
    "RunInfo",
    "RunSummary",
    "Totals",
    "TranscriptFold",
    "TranscriptRerun",
    "definition_drift",
    "fold_transcript",
    "json_diff",
    "json_equal",
    "rerun_transcript",
]
