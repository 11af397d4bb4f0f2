"""A transcript with everything a trace shows: an agent run whose calls fail and are
denied, whose second model request is retried once and whose third is sent after the
context was trimmed; a run that resumes it; and one that forks it, whose last request
fails for good (it ends with model_error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from mini_harness.agent import AgentConfig, AgentLoop, ModelRequest, ModelResponse, ScriptProvider
from mini_harness.cli.coding import make_approver
from mini_harness.errors import ModelError
from mini_harness.runtime import ToolRuntime
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript
from tests.agent.recorded_runs import invoke, write_script

FIRST: list[dict[str, Any]] = [
    {
        "text": "Looking.",
        "toolCalls": [
            {"name": "read_file", "arguments": {"path": "missing.txt"}},
            {"name": "read_file", "arguments": {"path": "README.md"}},
        ],
        "usage": {"inputTokens": 100, "outputTokens": 10},
    },
    {
        "toolCalls": [
            {"name": "note", "arguments": {"text": "remember"}},
            {"name": "read_file", "arguments": {"path": "README.md", "offset": 2}},
        ],
        "usage": {"inputTokens": 150, "outputTokens": 12, "cachedTokens": 50},
    },
    {"text": "It is a demo.", "usage": {"inputTokens": 120, "outputTokens": 5}},
]


class RetriedOnce:
    """The script's responses, the second request failing once (rate limited) first."""

    def __init__(self, inner: ScriptProvider) -> None:
        self.inner = inner
        self.name = "openai-compatible:demo-model"
        self.model = "demo-model"
        self.requests = 0

    def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
        self.requests += 1
        if self.requests == 2:
            kwargs["on_retry"](ModelError("rate_limited", "slow down", status=429, attempt=1))
        response: ModelResponse = self.inner.complete(request, **kwargs)
        return response


def registry(workspace: Path) -> Any:
    """The default tools, and `note`, which is not read-only: the policy asks, so with
    `--approve never` it is denied."""
    tools = default_registry(workspace)
    tools.add(
        "note",
        lambda data: {"noted": data["text"]},
        description="Write a note.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    return tools


def build(directory: Path) -> tuple[Path, dict[str, str]]:
    """The transcript, and the run ids by name (first, resumed, forked)."""
    workspace = directory / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Demo\n" + "A tiny project.\n" * 800)
    log = directory / "t.jsonl"
    write_script(directory / "first.json", FIRST)
    provider = RetriedOnce(ScriptProvider(directory / "first.json"))
    with JsonlTranscript(log) as sink:
        runtime = ToolRuntime(registry(workspace), sink, approver=make_approver(workspace, "never"))
        config = AgentConfig(task="What is this?", max_context_tokens=7_000)
        outcome = AgentLoop(runtime, provider, config).run()
    assert outcome.stop_reason == "final", outcome
    model = write_script(directory / "more.json", [{"text": "Nothing more."}])
    where = ["--workspace", str(workspace), "--approve", "never"]
    resumed = invoke(["resume", str(log), "And then?", "--model", model, *where])
    assert resumed.exit_code == 0, resumed.output
    # The fork calls a tool, then asks the script for an answer it does not have: its
    # second request fails for good, and it ends with model_error.
    model = write_script(directory / "fork.json", [{"toolCalls": [{"name": "list_files"}]}])
    forked = invoke(["fork", str(log), "--run", "1", "--at-step", "2", "--model", model, *where])
    assert forked.exit_code == 1, forked.output
    runs = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    ids = [event["runId"] for event in runs if event["type"] == "RunStarted"]
    return log, dict(zip(("first", "resumed", "forked"), ids, strict=True))
