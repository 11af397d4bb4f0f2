"""Golden transcripts of agent runs: a scripted model, the run recorded and compared.

The recipe of docs/golden-testing.md: drive the agent with `script:` responses on the
golden fixture's runtime, check that every scripted response was used, then compare the
transcript. A tool change that alters what goes back to the model changes the golden.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
from mini_harness.testing import Golden
from mini_harness.tools import default_registry

RESPONSES = [
    {"toolCalls": [{"name": "list_files", "arguments": {}}]},
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"text": "A tiny project."},
]


class TestGoldenAgentRun:
    def test_scripted_run(self, golden: Golden, workspace: Path, tmp_path: Path) -> None:
        """A scripted agent run's transcript matches its golden, every response used."""
        script = tmp_path / "script.json"
        script.write_bytes(orjson.dumps(RESPONSES))
        provider = ScriptProvider(script)
        runtime = golden.runtime(default_registry(workspace))
        config = AgentConfig(task="What is this project?", system_prompt="You are a test.")
        outcome = AgentLoop(runtime, provider, config).run()
        assert outcome.stop_reason == "final"
        assert provider.unused() == ()
        golden.check_transcript()
