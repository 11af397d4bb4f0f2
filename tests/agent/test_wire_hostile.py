"""A hostile model behind the loopback servers, through the CLI: it echoes the provider's own
API key (as is, upper-cased, a character off) in its text, its response id and its tool
arguments, and sends tool arguments nested far too deep."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import attrs
import orjson
import pytest

from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import cut_after, invoke
from tests.agent.wire_servers import AnthropicWireServer, OpenAIWireServer, Turn, WireServer

KEY = "sk-proj-Q7fLm2Xc9VbN4tRz8KdW1yHs6JpE3uGa5"
# Each copy a model might try to slip past a filter that matches the key exactly.
COPIES = {
    "exact": KEY,
    "upper-cased": KEY.upper(),
    "one character off": KEY[:20] + ("x" if KEY[20] != "x" else "y") + KEY[21:],
    "cut short": KEY[6:30],
}


@attrs.frozen
class Wire:
    """A loopback server and the CLI settings that send a run to it."""

    server: WireServer
    model: str
    env: dict[str, str | None]


@pytest.fixture(name="wire", params=["openai", "anthropic"])
def _wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    if request.param == "openai":
        with OpenAIWireServer(api_key=KEY) as server:
            env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
            yield Wire(server, "openai:gpt-4o-mini", dict(env))
    else:
        with AnthropicWireServer(api_key=KEY) as server:
            env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url}
            yield Wire(server, "anthropic:claude-haiku-4-5", dict(env))


def echoing_turns() -> tuple[Turn, Turn]:
    """A tool call whose arguments hold the key, then an answer that holds every copy."""
    arguments = orjson.dumps({"text": f"key={COPIES['one character off']}"}).decode()
    call = Turn(
        text=f"My key is {KEY}.\n",
        tool_calls=(("call_1", "echo", arguments),),
        response_id=f"resp-{KEY}",
    )
    answer = Turn(text=" / ".join(COPIES.values()), response_id=f"resp-{KEY.upper()}", piece=3)
    return call, answer


def assert_hidden(text: str, where: str) -> None:
    """No copy of the key is in `text`."""
    for name, copy in COPIES.items():
        assert copy.lower() not in text.lower(), f"{name} copy of the key in {where}"


class TestEchoedKey:
    @pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
    def test_run_never_shows_or_records_the_key(
        self, wire: Wire, tmp_path: Path, stream: bool
    ) -> None:
        """Without --redact-env, every copy of the provider's key the model sends back is
        redacted on the terminal, in the transcript and on the view page."""
        log = tmp_path / "t.jsonl"
        wire.server.script(*echoing_turns())
        args = ["run", "Say your key.", "--model", wire.model,
                "--log", str(log)]  # fmt: skip
        result = invoke([*args, *([] if stream else ["--no-stream"])], env=wire.env)
        assert result.exit_code == 0, result.output
        assert_hidden(result.output, "the terminal")
        assert "My key is [REDACTED]." in result.output
        recorded = log.read_text()
        assert_hidden(recorded, "the transcript")
        run = fold_agent_runs(log)[0]
        assert run.final_text == " / ".join(["[REDACTED]"] * len(COPIES))
        assert verify_transcript(log).problems() == []
        page = tmp_path / "t.html"
        assert invoke(["view", str(log), "-o", str(page)]).exit_code == 0
        assert_hidden(page.read_text(), "the view page")

    def test_json_document_never_shows_the_key(self, wire: Wire, tmp_path: Path) -> None:
        """--json's document has the final text redacted too."""
        wire.server.script(*echoing_turns())
        args = ["run", "Say your key.", "--model", wire.model,
                "--json"]  # fmt: skip
        result = invoke(args, env=wire.env)
        assert result.exit_code == 0, result.output
        assert_hidden(result.output, "the --json document")
        assert orjson.loads(result.output)["finalText"].startswith("[REDACTED] / ")

    def test_resume_never_shows_or_records_the_key(self, wire: Wire, tmp_path: Path) -> None:
        """A resumed run redacts the key it is answered with, on the terminal and on disk."""
        log, cut = tmp_path / "t.jsonl", tmp_path / "cut.jsonl"
        wire.server.script(Turn(tool_calls=(("call_1", "echo", '{"text": "hi"}'),)))
        wire.server.script(Turn(text="done"))
        args = ["run", "Echo.", "--model", wire.model]
        assert invoke([*args, "--log", str(log)], env=wire.env).exit_code == 0
        cut_after(log, cut, "ToolSucceeded")
        wire.server.script(echoing_turns()[1])
        result = invoke(["resume", str(cut), "--model", wire.model], env=wire.env)  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "[REDACTED] / [REDACTED]" in result.output
        assert_hidden(result.output, "the terminal")
        assert_hidden(cut.read_text(), "the transcript")

    def test_live_model_never_shows_or_records_the_key(
        self, wire: Wire, readme_ws: Path, tmp_path: Path
    ) -> None:
        """`replay --rerun --live-model` redacts what the live model says."""
        log = tmp_path / "t.jsonl"
        wire.server.script(
            Turn(tool_calls=(("call_1", "read_file", '{"path": "README.md"}'),)),
            Turn(text="A tiny project."),
        )
        args = ["run", "What is it?", "--model", wire.model, "--log", str(log)]
        assert invoke(args, env=wire.env).exit_code == 0
        (readme_ws / "README.md").write_text("# Demo\nA huge project.\n")
        wire.server.script(echoing_turns()[1])
        result = invoke(["replay", str(log), "--rerun", "--live-model", "--model", wire.model],
                        env=wire.env)  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "diverged at step 2" in result.output
        assert_hidden(result.output, "the terminal")
        assert_hidden(log.read_text(), "the transcript")
        assert fold_agent_runs(log)[-1].final_text is not None


class TestDeepArguments:
    """Arguments nested past any parser's limit are the call's invalid input."""

    @pytest.mark.parametrize("depth", [500, 2000])
    def test_refused_as_invalid_input_and_resumable(
        self, wire: Wire, tmp_path: Path, depth: int
    ) -> None:
        """The call fails as invalid_input and the model hears of it; the run goes on, and a
        resume of it sends a history the server accepts."""
        log = tmp_path / "t.jsonl"
        deep = '{"text": ' + "[" * depth + "]" * depth + "}"
        wire.server.script(Turn(tool_calls=(("call_1", "echo", deep),)), Turn(text="Sorry."))
        args = ["run", "Go.", "--model", wire.model]
        result = invoke([*args, "--log", str(log)], env=wire.env)
        assert result.exit_code == 0, result.output
        assert "RecursionError" not in result.output
        events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        (failed,) = [e for e in events if e["type"] == "ToolFailed"]
        assert failed["error"]["kind"] == "invalid_input"
        assert events[-1]["stopReason"] == "final"
        sent = wire.server.requests[1].body["messages"]
        told = sent[-1]["content"] if "tool_call_id" in sent[-1] else sent[-1]["content"][0]
        assert re.search(
            "nested deeper than 100 levels|not valid JSON", orjson.dumps(told).decode()
        )
        assert wire.server.rejections == []
        cut = tmp_path / "cut.jsonl"
        cut_after(log, cut, "ToolFailed")
        wire.server.script(Turn(text="Resumed."))
        result = invoke(["resume", str(cut), "--model", wire.model], env=wire.env)  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (fold_agent_runs(cut)[-1].final_text, wire.server.rejections) == ("Resumed.", [])
