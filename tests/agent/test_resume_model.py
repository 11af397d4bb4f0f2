"""Resume and fork go on with the model the run recorded, unless `--model` says otherwise:
never a silent switch to whatever this shell's keys or settings would pick for a new run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_harness.replay import fold_agent_runs
from tests.agent.recorded_runs import invoke
from tests.agent.wire_servers import OpenAIWireServer, Turn

KEY = "sk-test-0123456789abcdef"


@pytest.fixture(name="server")
def _server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture(name="recorded")
def _recorded(server: OpenAIWireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run that answered, recorded with `--model openai:gpt-4o-mini` and its key."""
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")  # the transcript out of the agent's reach
    server.script(Turn(text="First answer."))
    log = tmp_path / "t.jsonl"
    result = invoke(
        ["run", "Task", "--model", "openai:gpt-4o-mini", "--log", str(log)],
        env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url},
    )
    assert result.exit_code == 0, result.output
    return log


def last_model(log: Path) -> str:
    """The model provider the last agent run of `log` recorded."""
    started = fold_agent_runs(log)[-1].started
    assert started is not None
    assert started.model is not None
    return started.model.provider


def test_the_run_records_the_provider_as_model_takes_it(recorded: Path) -> None:
    """RunStarted names the provider as `--model` chose it (openai, not the wire's name)."""
    assert last_model(recorded) == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    "command", [["resume"], ["fork", "--at-step", "1"]], ids=["resume", "fork"]
)
def test_without_the_recorded_models_key_nothing_runs(
    recorded: Path, server: OpenAIWireServer, command: list[str]
) -> None:
    """A new shell without OPENAI_API_KEY: exit 2 naming the variable to set and --model
    to choose another; not the mock in its place, and nothing appended."""
    before = recorded.read_bytes()
    result = invoke([*command, str(recorded), "go on"], env={"OPENAI_BASE_URL": server.base_url})
    assert result.exit_code == 2, result.output
    assert "Model provider" not in result.output
    assert "used openai:gpt-4o-mini" in result.output
    assert "OPENAI_API_KEY" in result.output
    assert "--model PROVIDER:MODEL" in result.output
    assert recorded.read_bytes() == before
    assert len(server.requests) == 1


def test_resume_goes_on_with_the_recorded_model(recorded: Path, server: OpenAIWireServer) -> None:
    """With another provider's key set first in line and MINI_HARNESS_MODEL naming the
    mock (what a new run would take), the resumed run still asks the recorded model, and
    says so."""
    server.script(Turn(text="Second answer."))
    env: dict[str, str | None] = {
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": server.base_url,
        "DEEPSEEK_API_KEY": "sk-deepseek-0123456789",
        "MINI_HARNESS_MODEL": "mock",
    }
    result = invoke(["resume", str(recorded), "go on"], env=env)
    assert result.exit_code == 0, result.output
    assert "Model provider: openai:gpt-4o-mini (as the run recorded)" in result.output
    assert "Second answer." in result.output
    assert [request.body["model"] for request in server.requests] == ["gpt-4o-mini"] * 2
    assert len(fold_agent_runs(recorded)) == 2
    assert last_model(recorded) == "openai:gpt-4o-mini"


def test_model_chooses_another(recorded: Path, server: OpenAIWireServer) -> None:
    """--model chooses another model (no key needed for the mock), and the header says
    which one the run had."""
    result = invoke(["fork", str(recorded), "--at-step", "1", "--model", "mock"])
    assert result.exit_code == 0, result.output
    assert "Model provider: mock (--model; the run recorded openai:gpt-4o-mini)" in result.output
    assert len(server.requests) == 1
    assert len(fold_agent_runs(recorded)) == 2
    assert last_model(recorded) == "mock"


@pytest.mark.parametrize(
    "command", [["resume"], ["fork", "--at-step", "1"]], ids=["resume", "fork"]
)
def test_a_transcript_never_chooses_the_script_that_plays_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """A run played by `script:FILE` goes on only when --model names a script: a transcript
    (which may come from anywhere) naming a file here does not make that file play the
    model. Exit 2 before anything is written; with --model it goes on."""
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    script = tmp_path / "play.json"
    script.write_text('[{"text": "First answer."}, {"text": "Played again."}]')
    log = tmp_path / "t.jsonl"
    result = invoke(["run", "Task", "--model", f"script:{script}", "--log", str(log)])
    assert result.exit_code == 0, result.output
    before = log.read_bytes()

    refused = invoke([*command, str(log), "go on"])
    assert refused.exit_code == 2, refused.output
    assert f"used script:{script}" in refused.output
    assert f"--model script:{script}" in refused.output
    assert "Played again." not in refused.output
    assert log.read_bytes() == before

    chosen = invoke([*command, str(log), "go on", "--model", f"script:{script}"])
    assert chosen.exit_code == 0, chosen.output
    assert len(fold_agent_runs(log)) == 2
