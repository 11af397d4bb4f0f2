"""A golden agent transcript as the model: replayed offline against today's tools, it fails
the moment a tool change would send the agent down another path.

The worked example of docs/golden-testing.md ("Would the agent still take the same path?").
"""

from __future__ import annotations

from pathlib import Path

from mini_harness import ToolRegistry
from mini_harness.events import JsonValue
from mini_harness.replay import fold_agent_runs, replay_agent_run
from mini_harness.tools import default_registry

GOLDEN = Path(__file__).parent / "goldens" / "test_golden_agent"
RUN = GOLDEN / "TestGoldenAgentRun.test_scripted_run.jsonl"


def shouting_read_file(workspace: Path) -> ToolRegistry:
    """The built-in tools, except that read_file now returns its text in capitals."""
    registry = default_registry(workspace)
    original = registry.get("read_file")
    assert original is not None

    def read_file(data: JsonValue) -> JsonValue:
        result = original.handler(data)
        assert isinstance(result, dict)
        return {**result, "text": str(result["text"]).upper()}

    changed = ToolRegistry()
    for tool in registry:  # same tools, same order: the same definitions go to the model
        handler = read_file if tool.definition.name == "read_file" else tool.handler
        changed.register(tool.definition, handler)
    return changed


class TestSamePath:
    def test_unchanged_tools_take_the_same_path(self, workspace: Path) -> None:
        """Today's tools rebuild every recorded request: the agent would do the same."""
        (run,) = fold_agent_runs(RUN)
        replay = replay_agent_run(run, default_registry(workspace))
        assert replay.summary == "replayed: identical through step 3"

    def test_a_tool_change_is_caught_at_the_step_it_changes(self, workspace: Path) -> None:
        """A read_file that returns other text changes the prompt of the step after the
        read: the replay fails there, with the diff of the result."""
        (run,) = fold_agent_runs(RUN)
        replay = replay_agent_run(run, shouting_read_file(workspace))
        assert replay.diverged_at == 3
        (diff,) = replay.diffs
        assert '+  "text": "# DEMO\\nA TINY PROJECT.\\n"' in diff
