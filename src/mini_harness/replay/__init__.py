"""Replay: fold a transcript back into runs, calls and context reports; re-run its calls.

A fold never calls a handler. A re-run dispatches recorded calls again against a registry
and compares outputs as JSON values.
"""

from __future__ import annotations

from mini_harness.replay.corpus import CorpusReport, fold_corpus
from mini_harness.replay.fold import (
    TranscriptFold,
    agent_context_report,
    fold_agent_runs,
    fold_transcript,
)
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
    "CorpusReport",
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
    "agent_context_report",
    "definition_drift",
    "fold_agent_runs",
    "fold_corpus",
    "fold_transcript",
    "json_diff",
    "json_equal",
    "rerun_transcript",
]
