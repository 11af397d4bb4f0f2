"""What `mini-harness mcp` answers, checked without the SDK where the SDK is not needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.errors import InvalidInputError, ToolHandlerError
from mini_harness.mcp.server import error_result, list_tools_result, success_result
from mini_harness.runtime import ToolRegistry, ToolRuntime, mcp_tool


class TestResultShapes:
    def test_object_output(self) -> None:
        """An object output is both the structured content and its compact JSON text."""
        assert success_result({"text": "hé", "n": [1, 2]}) == {
            "content": [{"type": "text", "text": '{"text":"hé","n":[1,2]}'}],
            "structuredContent": {"text": "hé", "n": [1, 2]},
        }

    @pytest.mark.parametrize(
        ("output", "text"),
        [("hello", '"hello"'), (3.5, "3.5"), ([1, {"a": None}], '[1,{"a":null}]'), (None, "null")],
    )
    def test_non_object_output_is_text_only(self, output: object, text: str) -> None:
        """Outputs that are not objects travel as compact JSON text, without structuredContent."""
        assert success_result(output) == {"content": [{"type": "text", "text": text}]}

    def test_failures_carry_our_message(self) -> None:
        """A recorded failure becomes an isError result whose only text is our message."""
        invalid = InvalidInputError(
            "echo", "Invalid input for echo.text: expected string", path="echo.text"
        )
        crashed = ToolHandlerError("boom", "Tool boom failed: ValueError: boom", error_type="X")
        assert error_result(invalid) == {
            "content": [{"type": "text", "text": "Invalid input for echo.text: expected string"}],
            "isError": True,
        }
        assert error_result(crashed)["content"][0]["text"] == "Tool boom failed: ValueError: boom"

    def test_listing_is_the_registry_unchanged(self, registry: ToolRegistry) -> None:
        """tools/list holds every definition exactly as mcp_tool renders it."""
        listing = list_tools_result(ToolRuntime(registry))
        assert listing == {"tools": [mcp_tool(d) for d in registry.list()]}
        assert [t["name"] for t in listing["tools"]] == [d.name for d in registry.list()]
        (add,) = [t for t in listing["tools"] if t["name"] == "add"]
        assert add["annotations"] == {"readOnlyHint": True}


class TestWithoutTheExtra:
    def test_missing_sdk_is_a_one_line_usage_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the mcp extra the command exits 2 and says how to install it."""
        monkeypatch.setitem(sys.modules, "mcp", None)
        monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)
        result = CliRunner().invoke(cli, ["mcp"])
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            "[mini-harness] Error: the mcp command needs the MCP SDK: "
            'pip install "mini-harness[mcp]"\n'
        )

    def test_other_commands_work_without_it(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The rest of the CLI never imports the SDK."""
        monkeypatch.setitem(sys.modules, "mcp", None)
        result = CliRunner().invoke(cli, ["--tool", "echo", "--tool-input", '{"text":"x"}'])
        assert result.exit_code == 0
        help_text = CliRunner().invoke(cli, ["mcp", "--help"])
        assert help_text.exit_code == 0
        assert "mini-harness[mcp]" in help_text.stdout


class TestUsage:
    def test_workspace_must_exist(self, tmp_path: Path) -> None:
        """--workspace naming no directory is a usage error before anything is served."""
        result = CliRunner().invoke(cli, ["mcp", "--workspace", str(tmp_path / "nope")])
        assert result.exit_code == 2
        assert "does not exist" in result.stderr
