"""Derived schemas are what the CLI prints and what RunStarted snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import attrs
import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import Field, MemorySink, ToolRegistry, ToolRuntime
from mini_harness.cli import cli
from mini_harness.events import RunStarted
from mini_harness.runtime import mcp_tool
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, TranscriptReader


@attrs.frozen
class Area:
    square_metres: float


def typed_registry(workspace: str | None = None) -> ToolRegistry:
    """The built-in tools plus one typed tool."""
    registry = default_registry(workspace)

    @registry.tool
    def area(width: Annotated[float, Field(gt=0)], height: float = 1.0) -> Area:
        """Area of a rectangle.

        Args:
            width: In metres.
        """
        return Area(width * height)

    return registry


AREA_INPUT = {
    "type": "object",
    "properties": {
        "width": {"type": "number", "exclusiveMinimum": 0, "description": "In metres."},
        "height": {"type": "number", "default": 1.0},
    },
    "required": ["width"],
    "additionalProperties": False,
}
AREA_OUTPUT = {
    "type": "object",
    "properties": {"square_metres": {"type": "number"}},
    "required": ["square_metres"],
    "additionalProperties": False,
}


REGISTRY = f"{__name__}:typed_registry"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _area(definitions: list[dict[str, object]]) -> dict[str, object]:
    return next(d for d in definitions if d["name"] == "area")


class TestToolsCommand:
    def test_json_and_mcp_print_the_derived_schemas(self) -> None:
        """`tools` prints the derived input and output schemas exactly."""
        for fmt in ("json", "mcp"):
            result = run("tools", "--registry", REGISTRY, "--format", fmt)
            assert result.exit_code == 0
            payload = orjson.loads(result.output)
            entry = _area(payload if fmt == "json" else payload["tools"])
            assert entry == {
                "name": "area",
                "description": "Area of a rectangle.",
                "inputSchema": AREA_INPUT,
                "outputSchema": AREA_OUTPUT,
            }

    def test_openai_and_anthropic_carry_no_output_schema(self) -> None:
        """The OpenAI and Anthropic shapes get the input schema only."""
        openai = orjson.loads(run("tools", "--registry", REGISTRY, "--format", "openai").output)
        function = next(t["function"] for t in openai if t["function"]["name"] == "area")
        assert function == {
            "name": "area",
            "description": "Area of a rectangle.",
            "parameters": AREA_INPUT,
        }
        anthropic = _area(
            orjson.loads(run("tools", "--registry", REGISTRY, "--format", "anthropic").output)
        )
        assert anthropic == {
            "name": "area",
            "description": "Area of a rectangle.",
            "input_schema": AREA_INPUT,
        }

    def test_cli_dispatch_validates_against_the_derived_schema(self) -> None:
        """`--registry` with `--tool` on a typed tool validates against its derived schema."""
        ok = run(
            "--registry", REGISTRY, "--tool", "area", "--tool-input", '{"width": 2, "height": 3}'
        )
        assert ok.exit_code == 0
        assert '"output":{"square_metres":6.0}' in ok.output
        bad = run("--registry", REGISTRY, "--tool", "area", "--tool-input", '{"width": 0}')
        assert bad.exit_code == 1
        assert bad.stderr == (
            "[mini-harness] Error: Invalid input for area.width: expected a number > 0\n"
        )


class TestRunStarted:
    def test_memory_sink_snapshot_holds_the_derived_schemas(self) -> None:
        """RunStarted records the typed tool's derived definition."""
        sink = MemorySink()
        ToolRuntime(typed_registry(), sink).start()
        started = sink.events[1]
        assert isinstance(started, RunStarted)
        assert _area([mcp_tool(d) for d in started.tools])["inputSchema"] == AREA_INPUT
        assert _area([mcp_tool(d) for d in started.tools])["outputSchema"] == AREA_OUTPUT

    def test_jsonl_transcript_round_trips_the_derived_schemas(self, tmp_path: Path) -> None:
        """A transcript read back has the same derived schemas in RunStarted."""
        path = tmp_path / "t.jsonl"
        with JsonlTranscript(path) as log:
            ToolRuntime(typed_registry(), log).dispatch("area", {"width": 2})
        events = [record.event for record in TranscriptReader(path)]
        started = next(e for e in events if isinstance(e, RunStarted))
        assert _area([mcp_tool(d) for d in started.tools])["inputSchema"] == AREA_INPUT
        assert _area([mcp_tool(d) for d in started.tools])["outputSchema"] == AREA_OUTPUT


class TestReadme:
    def test_readme_typed_tool_runs_and_is_short(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The README's typed-tool example is under 15 lines and prints what it says."""
        readme = (Path(__file__).parent.parent / "README.md").read_text()
        section = readme.split("## Typed tools", 1)[1]
        code = section.split("```python\n", 1)[1].split("```", 1)[0]
        assert len(code.splitlines()) < 15
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        assert capsys.readouterr().out == "['hi', 'hi']\n"
