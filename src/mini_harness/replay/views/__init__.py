"""Views of a history: the replay report (`report`) and its context reports (`context`),
the timeline `show` prints (`text`, with `filters` and `describe`), and the page `view`
writes (`page`)."""

from __future__ import annotations

from mini_harness.replay.views.context import (
    ContextReports,
    agent_context_report,
    agent_report,
    context_reports,
)

__all__ = ["ContextReports", "agent_context_report", "agent_report", "context_reports"]
