"""Continuing a run from its history: re-running its calls against today's tools
(`rerun`), replaying an agent run offline with its recorded answers (`offline`), and the
openings of a run that resumes or forks another (`plans`)."""

from __future__ import annotations

from mini_harness.replay.continuing.call_by_call import (
    RerunAs,
    TranscriptRerun,
    Translate,
    definition_drift,
    json_diff,
    json_equal,
    rerun_transcript,
    safe_to_repeat,
)
from mini_harness.replay.continuing.offline import AgentReplay, replay_agent_run
from mini_harness.replay.continuing.outcomes import (
    DIFFERING,
    OUTCOMES,
    Drift,
    RerunOutcome,
    RerunReport,
    differing,
)
from mini_harness.replay.continuing.plans import (
    ResumePlan,
    continued_config,
    fork_opening,
    resume_plan,
)

__all__ = [
    "DIFFERING",
    "OUTCOMES",
    "AgentReplay",
    "Drift",
    "RerunAs",
    "RerunOutcome",
    "RerunReport",
    "ResumePlan",
    "TranscriptRerun",
    "Translate",
    "continued_config",
    "definition_drift",
    "differing",
    "fork_opening",
    "json_diff",
    "json_equal",
    "replay_agent_run",
    "rerun_transcript",
    "resume_plan",
    "safe_to_repeat",
]
