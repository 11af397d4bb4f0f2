"""One history of a transcript: runs, steps, model requests and responses, calls with
their approvals and effects, origins, figures and problems, read by one fold.

Every reader of a transcript's history (the replay report, show, view, resume, fork,
re-run, offline replay, undo, the corpus) reads it from here; none parses lines or reads
fields by name.
"""

from __future__ import annotations

from mini_harness.replay.history.calls import (
    FAILED,
    IN_DOUBT,
    SUCCEEDED,
    Approval,
    Call,
    CallList,
)
from mini_harness.replay.history.figures import (
    CHAIN_KINDS,
    UNFINISHED,
    AgentFigures,
    LogProblem,
    Totals,
    read_problems,
)
from mini_harness.replay.history.fold import FoldItem, TranscriptFold
from mini_harness.replay.history.read import (
    HeldItems,
    fold_agent_runs,
    fold_effects,
    fold_transcript,
    read_history,
)
from mini_harness.replay.history.runs import History, Run, RunItem
from mini_harness.replay.history.select import (
    RunSelection,
    check_step,
    select_agent_run,
    select_run,
    select_step,
    step_range,
)
from mini_harness.replay.history.steps import Step

__all__ = [
    "CHAIN_KINDS",
    "FAILED",
    "IN_DOUBT",
    "SUCCEEDED",
    "UNFINISHED",
    "AgentFigures",
    "Approval",
    "Call",
    "CallList",
    "FoldItem",
    "HeldItems",
    "History",
    "LogProblem",
    "Run",
    "RunItem",
    "RunSelection",
    "Step",
    "Totals",
    "TranscriptFold",
    "check_step",
    "fold_agent_runs",
    "fold_effects",
    "fold_transcript",
    "read_history",
    "read_problems",
    "select_agent_run",
    "select_run",
    "select_step",
    "step_range",
]
