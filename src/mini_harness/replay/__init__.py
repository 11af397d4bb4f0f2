"""Replay: a transcript read once into its history; views of it (the report, show,
view); continuing a run from it (re-run, offline replay, resume, fork); corpora of many.

A fold never calls a handler. A re-run dispatches recorded calls again against a registry
and compares outputs as JSON values.
"""

from __future__ import annotations

from mini_harness.replay.continuing.outcomes import (
    OUTCOMES,
    Drift,
    RerunOutcome,
    RerunReport,
)
from mini_harness.replay.continuing.rerun import (
    TranscriptRerun,
    definition_drift,
    json_diff,
    json_equal,
    rerun_transcript,
)
from mini_harness.replay.corpus import CorpusReport, fold_corpus
from mini_harness.replay.history import (
    AgentFigures,
    Call,
    CallList,
    History,
    LogProblem,
    Run,
    Step,
    Totals,
    TranscriptFold,
    fold_agent_runs,
    fold_effects,
    fold_transcript,
    read_history,
    select_agent_run,
    select_run,
)
from mini_harness.replay.views.context import (
    ContextReports,
    agent_context_report,
    agent_report,
    context_reports,
)

__all__ = [
    "OUTCOMES",
    "AgentFigures",
    "Call",
    "CallList",
    "ContextReports",
    "CorpusReport",
    "Drift",
    "History",
    "LogProblem",
    "RerunOutcome",
    "RerunReport",
    "Run",
    "Step",
    "Totals",
    "TranscriptFold",
    "TranscriptRerun",
    "agent_context_report",
    "agent_report",
    "context_reports",
    "definition_drift",
    "fold_agent_runs",
    "fold_corpus",
    "fold_effects",
    "fold_transcript",
    "json_diff",
    "json_equal",
    "read_history",
    "rerun_transcript",
    "select_agent_run",
    "select_run",
]
