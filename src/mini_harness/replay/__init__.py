"""Replay: a transcript read once into its history (`history`); views of it: the replay
report, show and view (`views`); continuing a run from it: re-run, offline replay,
resume and fork (`continuing`); and corpora of many transcripts (`corpus`).

A fold never calls a handler. A re-run dispatches recorded calls again against a registry
and compares outputs as JSON values.
"""

from __future__ import annotations

from mini_harness.replay.continuing import (
    OUTCOMES,
    AgentReplay,
    Drift,
    RerunAs,
    RerunOutcome,
    RerunReport,
    ResumePlan,
    TranscriptRerun,
    Translate,
    continued_config,
    definition_drift,
    fork_opening,
    json_diff,
    json_equal,
    replay_agent_run,
    rerun_transcript,
    resume_plan,
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
from mini_harness.replay.views import (
    ContextReports,
    agent_context_report,
    agent_report,
    context_reports,
)

__all__ = [
    "OUTCOMES",
    "AgentFigures",
    "AgentReplay",
    "Call",
    "CallList",
    "ContextReports",
    "CorpusReport",
    "Drift",
    "History",
    "LogProblem",
    "RerunAs",
    "RerunOutcome",
    "RerunReport",
    "ResumePlan",
    "Run",
    "Step",
    "Totals",
    "TranscriptFold",
    "TranscriptRerun",
    "Translate",
    "agent_context_report",
    "agent_report",
    "context_reports",
    "continued_config",
    "definition_drift",
    "fold_agent_runs",
    "fold_corpus",
    "fold_effects",
    "fold_transcript",
    "fork_opening",
    "json_diff",
    "json_equal",
    "read_history",
    "replay_agent_run",
    "rerun_transcript",
    "resume_plan",
    "select_agent_run",
    "select_run",
]
