from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import ClassVar

import orjson
import pytest

from mini_harness import (
    DuplicateToolError,
    InvalidSchemaError,
    InvalidToolNameError,
    ToolDefinition,
    ToolRegistry,
)
from mini_harness.events import to_wire
from mini_harness.runtime import anthropic_tool, mcp_tool, openai_tool
from mini_harness.tools import default_registry
from mini_harness.transcripts.fields import structurer


def _definition(name: str = "t", schema: object = None) -> ToolDefinition:
    return ToolDefinition(name, "A tool.", schema if schema is not None else {"type": "object"})  # type: ignore[arg-type]


class TestRegister:
    def test_duplicate_name_is_refused(self) -> None:
        """Registering a second tool with a taken name fails and names it."""
        registry = ToolRegistry()
        registry.register(_definition("x"), lambda _: None)
        with pytest.raises(DuplicateToolError, match="Tool already registered: x") as info:
            registry.register(_definition("x"), lambda _: None)
        assert info.value.tool == "x"

    @pytest.mark.parametrize(
        "name", ["", "has space", "dot.name", "a" * 65, "ünï", "a/b", "a\n", "a" * 64 + "\n"]
    )
    def test_bad_names_are_refused(self, name: str) -> None:
        """Names outside [a-zA-Z0-9_-]{1,64}, a trailing newline included, are refused."""
        with pytest.raises(InvalidToolNameError, match="Invalid tool name"):
            ToolRegistry().register(_definition(name), lambda _: None)

    @pytest.mark.parametrize("name", ["a", "A-b_9", "x" * 64])
    def test_good_names_are_accepted(self, name: str) -> None:
        """Names valid for OpenAI, Anthropic and MCP at once register."""
        ToolRegistry().register(_definition(name), lambda _: None)

    @pytest.mark.parametrize(
        ("schema", "fragment"),
        [
            ({"type": "string"}, 'root must have "type": "object"'),
            ({"properties": {}}, 'root must have "type": "object"'),
            ({"type": "object", "properties": {"a": {"type": "strin"}}}, "Invalid input schema"),
            ({"type": "object", "minProperties": -1}, "Invalid input schema"),
            ({"type": "object", "$ref": "https://example.com/s.json"}, "never fetched"),
            ([], "not an object"),
        ],
    )
    def test_invalid_schemas_are_refused(self, schema: object, fragment: str) -> None:
        """A schema that is not valid JSON Schema with an object root fails, naming the tool."""
        with pytest.raises(InvalidSchemaError, match="tool bad") as info:
            ToolRegistry().register(_definition("bad", schema), lambda _: None)
        assert fragment in info.value.message

    def test_local_refs_work(self) -> None:
        """$defs and local $refs are fine: only remote ones are refused."""
        schema = {
            "type": "object",
            "$defs": {"n": {"type": "integer"}},
            "properties": {"n": {"$ref": "#/$defs/n"}},
        }
        tool = ToolRegistry().register(_definition("refs", schema), lambda _: None)
        assert tool.validator.check({"n": 1}) == []
        assert tool.validator.check({"n": "1"})[0].message == "expected integer"


class TestList:
    def test_list_returns_definitions_in_registration_order(self) -> None:
        """list() gives definitions, never handlers, in the order tools were registered."""
        registry = ToolRegistry()
        for name in ("b", "a", "c"):
            registry.register(_definition(name), lambda _: None)
        listed = registry.list()
        assert [d.name for d in listed] == ["b", "a", "c"]
        assert all(isinstance(d, ToolDefinition) for d in listed)
        assert "handler" not in str(to_wire(listed))

    def test_repr_is_short(self) -> None:
        """The registry's repr says how many tools it holds."""
        assert repr(default_registry()).startswith("<ToolRegistry(num_tools=")

    def test_default_registry_has_read_only_echo(self) -> None:
        """The default registry holds echo, requiring text and annotated read-only."""
        echo = default_registry().get("echo")
        assert echo is not None
        assert echo.definition.input_schema["required"] == ["text"]
        assert echo.definition.annotations is not None
        assert echo.definition.annotations.read_only_hint is True


class TestExportShapes:
    def test_each_shape_carries_name_description_schema(self) -> None:
        """MCP, OpenAI and Anthropic shapes each hold the same definition in their own keys."""
        (echo,) = [d for d in default_registry().list() if d.name == "echo"]
        assert mcp_tool(echo)["inputSchema"] == echo.input_schema
        assert mcp_tool(echo)["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
        assert openai_tool(echo) == {
            "type": "function",
            "function": {
                "name": "echo",
                "description": echo.description,
                "parameters": echo.input_schema,
            },
        }
        assert anthropic_tool(echo) == {
            "name": "echo",
            "description": echo.description,
            "input_schema": echo.input_schema,
        }

    def test_definition_round_trips_through_json(self) -> None:
        """A definition written into RunStarted reads back equal."""
        (echo,) = [d for d in default_registry().list() if d.name == "echo"]
        assert structurer(ToolDefinition)(orjson.loads(orjson.dumps(mcp_tool(echo)))) == echo


# Registers each schema in a child process (a fetch holds the child's GIL, never the
# server's) and prints what happened as one JSON line per schema.
_REGISTER_EACH = """
import json, sys
from mini_harness.runtime import ToolDefinition, ToolRegistry
for schema in json.loads(sys.argv[1]):
    try:
        ToolRegistry().register(ToolDefinition("t", "A tool.", schema), lambda _: None)
        print(json.dumps(None))
    except Exception as exc:
        names = [cls.__name__ for cls in type(exc).__mro__]
        print(json.dumps([names, str(exc), getattr(exc, "uri", None)]))
"""


class _RecordingHandler(http.server.BaseHTTPRequestHandler):
    """Answers any GET with a valid 2020-12 meta-schema and notes the path it was asked."""

    requested: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.requested.append(self.path)
        body = b'{"$schema": "https://json-schema.org/draft/2020-12/schema"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture(name="server")
def _server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server serving schemas: its base URL and the paths requested of it."""
    _RecordingHandler.requested = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RecordingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _RecordingHandler.requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class TestRemoteResources:
    def test_nothing_outside_the_schema_is_fetched(self, server: tuple[str, list[str]]) -> None:
        """A remote "$schema", "$ref", "$dynamicRef" or a $ref resolved against a remote $id
        is refused at once with RemoteSchemaError naming it; the server is never contacted."""
        base, requested = server
        schemas = [
            {"$schema": f"{base}/x.json", "type": "object"},
            {"type": "object", "properties": {"a": {"$ref": f"{base}/y.json"}}},
            {"type": "object", "$dynamicRef": f"{base}/z.json"},
            {"$id": f"{base}/base.json", "type": "object", "properties": {"a": {"$ref": "o.json"}}},
        ]
        done = subprocess.run(
            [sys.executable, "-c", _REGISTER_EACH, json.dumps(schemas)],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        outcomes = [json.loads(line) for line in done.stdout.splitlines()]
        assert requested == []
        uris = [f"{base}/x.json", f"{base}/y.json", f"{base}/z.json", f"{base}/o.json"]
        for (names, message, uri), expected in zip(outcomes, uris, strict=True):
            assert names[:3] == ["RemoteSchemaError", "InvalidSchemaError", "RegistrationError"]
            assert uri == expected
            assert message.startswith("Invalid input schema for tool t: ")
            assert f"names {expected}" in message
            assert "remote resources are never fetched" in message

    @pytest.mark.parametrize(
        "meta",
        [
            "https://json-schema.org/draft/2020-12/schema",
            "https://json-schema.org/draft/2020-12/schema#",
            "http://json-schema.org/draft-07/schema#",
        ],
    )
    def test_known_meta_schemas_are_accepted(self, meta: str) -> None:
        """A "$schema" naming a draft jsonschema-rs carries registers without a fetch."""
        ToolRegistry().register(_definition("t", {"$schema": meta, "type": "object"}), print)

    def test_a_non_string_meta_schema_is_refused(self) -> None:
        """ "$schema": 5 is an invalid schema, said plainly."""
        with pytest.raises(InvalidSchemaError, match='"\\$schema" must be a string'):
            ToolRegistry().register(_definition("t", {"$schema": 5, "type": "object"}), print)
