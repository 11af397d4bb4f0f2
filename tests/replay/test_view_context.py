"""The Context Explorer over time: each agent step's request by part, as `view` draws it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mini_harness.replay import agent_report, fold_agent_runs, read_history
from mini_harness.replay.views.page import step_contexts
from tests.replay.timeline_fixtures import record_agent_run, tool_events, write


@pytest.fixture(name="agent_log")
def _agent_log(tmp_path: Path) -> Path:
    return record_agent_run(tmp_path)


def contexts_of(path: Path) -> dict[tuple[str, int], object]:
    return step_contexts(read_history(path, requests=True, detail=True, damage=True))


class TestStepContexts:
    def test_parts_in_report_order(self, agent_log: Path) -> None:
        """Each step has the report's parts in order, tool results apart from the rest of
        the conversation."""
        contexts = contexts_of(agent_log)
        assert [step for _run, step in contexts] == [1, 2, 3]
        for parts in contexts.values():
            assert isinstance(parts, list)
            assert [label for label, _tokens in parts] == [
                "System prompt",
                "Tool definitions",
                "Conversation",
                "Tool results",
            ]

    def test_totals_are_the_context_reports(self, agent_log: Path) -> None:
        """A step's parts add up to the total of its Context Explorer report."""
        run = fold_agent_runs(agent_log)[0]
        for (_run_id, step), parts in contexts_of(agent_log).items():
            report = agent_report(run, step)
            total = re.search(r"^Total +~([\d,]+) tokens$", report, re.M)
            assert total is not None
            assert isinstance(parts, list)
            assert sum(tokens for _label, tokens in parts) == int(total[1].replace(",", ""))

    def test_tool_results_grow(self, agent_log: Path) -> None:
        """The tool results part grows as the steps' results join the conversation."""
        results = [dict(parts)["Tool results"] for parts in contexts_of(agent_log).values()]  # type: ignore[call-overload]
        assert results[0] == 0
        assert results[0] < results[1] < results[2]

    def test_tool_runs_have_none(self, tmp_path: Path) -> None:
        """A transcript of tool runs only has no step contexts."""
        assert contexts_of(write(tmp_path / "t.jsonl", tool_events())) == {}
