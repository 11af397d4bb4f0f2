"""`mini-harness mcp` driven over real stdio: by the official SDK client and by raw JSON-RPC."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness.runtime import mcp_tool

pytest.importorskip(
    "mcp", reason="the mcp extra is not installed (pip install -e '.[dev,mcp]'); CI installs it"
)

import anyio
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.shared.exceptions import MCPError

from mini_harness.cli import cli
from mini_harness.events import RunStarted, ToolCalled, ToolFailed, ToolSucceeded
from mini_harness.mcp.server import list_tools_result
from mini_harness.runtime import ToolAnnotations, ToolDefinition, ToolRuntime
from mini_harness.tools import default_registry
from mini_harness.transcripts import TranscriptReader, TranscriptRecord, verify_transcript
from tests.mcp_client import RawClient, registry_options

SERVER = [sys.executable, "-m", "mini_harness", "mcp"]


def read_log(path: Path) -> tuple[list[TranscriptRecord], TranscriptReader]:
    reader = TranscriptReader(path)
    return list(reader), reader


def call_events(records: list[TranscriptRecord]) -> list[tuple[str, str, str | None]]:
    """(event type, tool name, error kind) for every call event, in order."""
    out: list[tuple[str, str, str | None]] = []
    for record in records:
        event = record.event
        if isinstance(event, ToolCalled | ToolSucceeded):
            out.append((type(event).__name__, event.name, None))
        elif isinstance(event, ToolFailed):
            out.append(("ToolFailed", event.name, event.error.kind))
    return out


async def sdk_session(log: Path, errlog: Path) -> dict[str, Any]:
    """Drive one session with the official client; return what it saw."""
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "--log", str(log)])
    seen: dict[str, Any] = {}
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listing = await session.list_tools()
            seen["tools"] = [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listing.tools
            ]
            seen["ok"] = await session.call_tool("echo", {"text": "hello"})
            seen["invalid"] = await session.call_tool("echo", {"text": 123})
            seen["missing"] = await session.call_tool("echo", {})
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("nope", {"x": 1})
            seen["unknown"] = unknown.value
    return seen


class TestOfficialClient:
    def test_session(self, tmp_path: Path) -> None:
        """A real MCP client lists tools, calls echo three ways and an unknown tool; all logged."""
        log, errlog = tmp_path / "t.jsonl", tmp_path / "stderr.txt"
        seen = anyio.run(sdk_session, log, errlog)

        assert seen["tools"] == [mcp_tool(d) for d in default_registry().list()]

        ok = seen["ok"]
        assert ok.is_error is False
        assert ok.structured_content == {"text": "hello"}
        assert [(c.type, c.text) for c in ok.content] == [("text", '{"text":"hello"}')]

        invalid = seen["invalid"]
        assert invalid.is_error is True
        assert [c.text for c in invalid.content] == ["Invalid input for echo.text: expected string"]
        assert invalid.structured_content is None
        missing = seen["missing"]
        assert [c.text for c in missing.content] == [
            'Invalid input for echo: missing required property "text"'
        ]

        assert seen["unknown"].code == -32602
        assert seen["unknown"].message == (
            "Unknown tool: nope. Registered tools: echo, list_files, read_file, search_text"
        )

        records, reader = read_log(log)
        assert reader.torn_tail is None
        assert reader.problems == []
        runs = [r.event for r in records if isinstance(r.event, RunStarted)]
        assert len(runs) == 1
        assert list(runs[0].tools) == default_registry().list()
        assert call_events(records) == [
            ("ToolCalled", "echo", None),
            ("ToolSucceeded", "echo", None),
            ("ToolCalled", "echo", None),
            ("ToolFailed", "echo", "invalid_input"),
            ("ToolCalled", "echo", None),
            ("ToolFailed", "echo", "invalid_input"),
            ("ToolCalled", "nope", None),
            ("ToolFailed", "nope", "unknown_tool"),
        ]
        assert {r.event.run_id for r in records if hasattr(r.event, "run_id")} == {runs[0].run_id}
        assert verify_transcript(log).problems() == []  # nothing in doubt, nothing broken
        stderr = errlog.read_text()
        assert "Traceback" not in stderr
        assert stderr.splitlines()[-1] == "[mini-harness] MCP session ended (end of input)"

        # The transcript is an audit log replay understands: the fold reports each call...
        folded = CliRunner().invoke(cli, ["replay", str(log), "--json"])
        assert folded.exit_code == 0, folded.output
        calls = orjson.loads(folded.stdout)["calls"]
        assert [(c["name"], c["status"]) for c in calls] == [
            ("echo", "succeeded"),
            ("echo", "failed"),
            ("echo", "failed"),
            ("nope", "failed"),
        ]
        # ...and re-running them against the same registry matches every one.
        rerun = CliRunner().invoke(cli, ["replay", str(log), "--rerun"])
        assert rerun.exit_code == 0, rerun.output
        assert "Re-run: 4 matched, 0 diverged, 0 now-fails, 0 now-succeeds, 0 skipped" in (
            rerun.stdout
        )


@pytest.fixture(name="client_factory")
def _client_factory(tmp_path: Path) -> Any:
    clients: list[RawClient] = []

    def start(*args: str) -> RawClient:
        client = RawClient(list(args), tmp_path)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.stop()


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


class TestShutdown:
    def test_sigterm(self, tmp_path: Path, client_factory: Any) -> None:
        """SIGTERM with stdin open and a call running: exit 0 at once, that call cancelled."""
        log = tmp_path / "t.jsonl"
        client = client_factory("--log", str(log), *registry_options(tmp_path))
        client.handshake()
        result = client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert result["result"]["structuredContent"] == {"text": "hi"}
        client.send("tools/call", {"name": "wait", "arguments": {"seconds": 60}})
        wait_for(lambda: log.read_bytes().count(b'"ToolCalled"') == 2)
        started = time.monotonic()
        client.process.send_signal(signal.SIGTERM)
        assert client.process.wait(timeout=5) == 0
        assert time.monotonic() - started < 5
        assert client.stderr().splitlines()[-1] == "[mini-harness] MCP session ended (SIGTERM)"
        records, reader = read_log(log)
        assert reader.torn_tail is None
        assert reader.problems == []
        assert log.read_bytes().endswith(b"\n")
        assert call_events(records) == [
            ("ToolCalled", "echo", None),
            ("ToolSucceeded", "echo", None),
            ("ToolCalled", "wait", None),
            ("ToolFailed", "wait", "cancelled"),
        ]
        assert verify_transcript(log).problems() == []  # nothing in doubt, nothing broken

    def test_sigterm_during_a_sync_tool(self, tmp_path: Path, client_factory: Any) -> None:
        """A sync tool that sleeps blocks nothing: pings are answered and SIGTERM cancels it."""
        log = tmp_path / "t.jsonl"
        client = client_factory("--log", str(log), *registry_options(tmp_path))
        client.handshake()
        client.send("tools/call", {"name": "nap", "arguments": {"seconds": 60}})
        wait_for(lambda: log.read_bytes().count(b'"ToolCalled"') == 1)
        pinged = time.monotonic()
        assert client.request("ping")["result"] == {}
        assert time.monotonic() - pinged < 2
        started = time.monotonic()
        client.process.send_signal(signal.SIGTERM)
        assert client.process.wait(timeout=5) == 0
        assert time.monotonic() - started < 5
        assert client.stderr().splitlines()[-1] == "[mini-harness] MCP session ended (SIGTERM)"
        records, reader = read_log(log)
        assert reader.problems == []
        assert call_events(records) == [
            ("ToolCalled", "nap", None),
            ("ToolFailed", "nap", "cancelled"),
        ]

    def test_timed_out_sync_tool_does_not_delay_exit(
        self, tmp_path: Path, client_factory: Any
    ) -> None:
        """After a sync tool times out, closing stdin ends the server without waiting for it."""
        log = tmp_path / "t.jsonl"
        client = client_factory("--log", str(log), *registry_options(tmp_path))
        client.handshake()
        reply = client.request("tools/call", {"name": "nap1", "arguments": {"seconds": 20}})
        assert reply["result"]["content"] == [
            {"type": "text", "text": "Tool nap1 timed out after 1 s"}
        ]
        assert client.process.stdin is not None
        started = time.monotonic()
        client.process.stdin.close()
        assert client.process.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        assert client.stderr().splitlines()[-1] == (
            "[mini-harness] MCP session ended (end of input)"
        )
        records, _ = read_log(log)
        assert call_events(records) == [
            ("ToolCalled", "nap1", None),
            ("ToolFailed", "nap1", "timeout"),
        ]

    def test_eof_ends_the_session(self, tmp_path: Path, client_factory: Any) -> None:
        """Closing stdin ends the session with exit 0; what tools print goes to stderr only."""
        log = tmp_path / "t.jsonl"
        client = client_factory("--log", str(log), *registry_options(tmp_path))
        client.handshake()
        client.request("tools/list")
        said = client.request("tools/call", {"name": "chatty", "arguments": {}})
        assert said["result"]["structuredContent"] == {"said": 2}
        client.request("tools/call", {"name": "echo", "arguments": {"text": 1}})
        assert client.process.stdin is not None
        client.process.stdin.close()
        assert client.process.wait(timeout=5) == 0
        assert client.process.stdout is not None
        assert client.process.stdout.read() == b""
        stderr = client.stderr()
        assert "print() from a tool\n" in stderr
        assert "os.write(1) from a tool\n" in stderr
        assert stderr.splitlines()[-1] == "[mini-harness] MCP session ended (end of input)"
        records, reader = read_log(log)
        assert reader.torn_tail is None
        assert call_events(records)[-2:] == [
            ("ToolCalled", "echo", None),
            ("ToolFailed", "echo", "invalid_input"),
        ]

    def test_client_that_stops_reading(self, tmp_path: Path, client_factory: Any) -> None:
        """A client that closes our stdout ends the session quietly: exit 0, no traceback."""
        log = tmp_path / "t.jsonl"
        client = client_factory("--log", str(log))
        client.handshake()
        assert client.process.stdout is not None
        client.process.stdout.close()
        client.send("tools/call", {"name": "echo", "arguments": {"text": "unheard"}})
        assert client.process.wait(timeout=5) == 0
        stderr = client.stderr()
        assert "Traceback" not in stderr
        assert stderr.splitlines()[-1] == (
            "[mini-harness] MCP session ended (client closed its input)"
        )
        records, reader = read_log(log)
        assert reader.torn_tail is None
        assert reader.problems == []
        assert call_events(records) == [
            ("ToolCalled", "echo", None),
            ("ToolSucceeded", "echo", None),
        ]


@pytest.fixture(name="session", scope="class")
def _session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One initialised server shared by the wire tests (starting one costs ~1 s)."""
    where = tmp_path_factory.mktemp("raw")
    client = RawClient(registry_options(where), where)
    client.handshake()
    yield client
    client.stop()


class TestWorkspace:
    @pytest.mark.parametrize("where", ["root", "mcp"])
    def test_workspace_binds_the_file_tools(self, tmp_path: Path, where: str) -> None:
        """`mini-harness --workspace DIR mcp` and `mcp --workspace DIR` both serve DIR's files."""
        workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
        workspace.mkdir()
        elsewhere.mkdir()
        (workspace / "inside.txt").write_text("hi\n")
        option = ("--workspace", str(workspace))
        if where == "root":
            client = RawClient([], elsewhere, root_args=option)
        else:
            client = RawClient(list(option), elsewhere)
        try:
            client.handshake()
            reply = client.request(
                "tools/call", {"name": "read_file", "arguments": {"path": "inside.txt"}}
            )
            assert reply["result"].get("isError", False) is False, reply
            assert reply["result"]["structuredContent"]["text"] == "hi\n"
        finally:
            client.stop()

    def test_root_workspace_and_registry_exclude_each_other(self, tmp_path: Path) -> None:
        """The root's --workspace is refused with --registry, as mcp's own --workspace is."""
        result = CliRunner().invoke(cli, ["--workspace", str(tmp_path), "mcp", "--registry", "x:y"])
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --workspace applies to the built-in tools; "
            "it cannot be used with --registry\n"
        )


class TestRawProtocol:
    def test_results_on_the_wire(self, session: RawClient) -> None:
        """JSON-RPC results carry exactly the documented shapes for success and invalid input."""
        ok = session.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert ok["result"]["content"] == [{"type": "text", "text": '{"text":"hi"}'}]
        assert ok["result"]["structuredContent"] == {"text": "hi"}
        assert ok["result"].get("isError", False) is False
        bad = session.request("tools/call", {"name": "echo"})
        assert bad["result"]["isError"] is True
        assert bad["result"]["content"] == [
            {"type": "text", "text": 'Invalid input for echo: missing required property "text"'}
        ]
        assert "structuredContent" not in bad["result"]

    def test_non_object_output_is_text_only(self, session: RawClient) -> None:
        """An array output comes back as compact JSON text without structuredContent."""
        reply = session.request("tools/call", {"name": "letters", "arguments": {"word": "ab"}})
        assert reply["result"]["content"] == [{"type": "text", "text": '["a","b"]'}]
        assert "structuredContent" not in reply["result"]

    @pytest.mark.parametrize(
        ("name", "message"),
        [
            ("boom", "Tool boom failed: ValueError: boom"),
            (
                "nan",
                "Tool nan returned a value that is not JSON: $.v: nan is not a JSON number",
            ),
        ],
    )
    def test_tool_failures_are_error_results(
        self, session: RawClient, name: str, message: str
    ) -> None:
        """A handler that raises or returns non-JSON gives isError with our message."""
        reply = session.request("tools/call", {"name": name, "arguments": {}})
        assert reply["result"]["isError"] is True
        assert reply["result"]["content"] == [{"type": "text", "text": message}]

    def test_malformed_params_are_protocol_errors(self, session: RawClient) -> None:
        """Arguments that are not an object never reach a tool: the client gets a JSON-RPC error."""
        reply = session.request("tools/call", {"name": "echo", "arguments": [1, 2]})
        assert reply["error"]["code"] == -32602
        follow = session.request("tools/call", {"name": "echo", "arguments": {"text": "still up"}})
        assert follow["result"]["structuredContent"] == {"text": "still up"}


class TestListing:
    def test_definitions_survive_the_sdk_models(self) -> None:
        """Output schemas, titles and every hint reach the wire exactly as registered."""
        registry = default_registry()
        registry.register(
            ToolDefinition(
                "measure",
                "Measures.",
                {"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}},
                annotations=ToolAnnotations(
                    title="Measure",
                    read_only_hint=False,
                    destructive_hint=False,
                    idempotent_hint=True,
                    open_world_hint=False,
                ),
                output_schema={"type": "object", "properties": {"size": {"type": "integer"}}},
            ),
            lambda data: {"size": 1},
        )
        listing = types.ListToolsResult.model_validate(list_tools_result(ToolRuntime(registry)))
        wire = listing.model_dump(by_alias=True, exclude_unset=True, mode="json")
        assert wire["tools"] == [mcp_tool(d) for d in registry.list()]


class TestUsage:
    def test_bad_registry_is_a_usage_error(self) -> None:
        """A --registry that cannot be loaded exits 2 with the loader's message, before serving."""
        result = CliRunner().invoke(cli, ["mcp", "--registry", "no_such_module_q:tools"])
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            "[mini-harness] Error: --registry no_such_module_q:tools: "
            "no module named 'no_such_module_q'\n"
        )

    def test_workspace_and_registry_exclude_each_other(self, tmp_path: Path) -> None:
        """--workspace configures the built-in tools, so it cannot be combined with --registry."""
        result = CliRunner().invoke(cli, ["mcp", "--workspace", str(tmp_path), "--registry", "x:y"])
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --workspace applies to the built-in tools; "
            "it cannot be used with --registry\n"
        )

    def test_what_it_says_is_redacted_as_its_log_is(self, tmp_path: Path) -> None:
        """The server's notes on stderr hide a --redact-env secret, as every command that
        records does (here it is in the log's name, which the notes give)."""
        secret = "tok-0123456789"
        log = tmp_path / f"{secret}.jsonl"
        done = subprocess.run(
            [*SERVER, "--log", str(log), "--redact-env", "DEMO_TOKEN"],
            input=b"",
            capture_output=True,
            timeout=60,
            check=False,
            env={**os.environ, "DEMO_TOKEN": secret},
        )
        assert done.returncode == 0, done.stderr
        stderr = done.stderr.decode()
        assert f"transcript {tmp_path}/[REDACTED].jsonl" in stderr
        assert secret not in stderr
        assert stderr.splitlines()[-1] == "[mini-harness] MCP session ended (end of input)"

    def test_closed_stdin_is_a_usage_error(self, tmp_path: Path) -> None:
        """`mini-harness mcp <&-` exits 2 with one error line, not a traceback."""
        log = tmp_path / "t.jsonl"
        done = subprocess.run(
            [*SERVER, "--log", str(log)],
            preexec_fn=lambda: os.close(0),  # the child starts with fd 0 closed
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2
        assert done.stdout == b""
        assert done.stderr == (
            b"[mini-harness] Error: stdin is closed: the mcp command reads MCP messages on "
            b"stdin (an MCP client starts it)\n"
        )
        assert not log.exists()

    def test_unusable_log_is_a_usage_error(self, tmp_path: Path) -> None:
        """A --log that cannot be opened exits 2 before anything is served."""
        (tmp_path / "a-file").write_text("")
        log = tmp_path / "a-file" / "t.jsonl"
        result = CliRunner().invoke(cli, ["mcp", "--log", str(log)])
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            f"[mini-harness] Error: cannot open transcript {log}: Not a directory\n"
        )


class TestLogWarnings:
    def test_torn_tail_set_aside_is_a_warning(self, tmp_path: Path, client_factory: Any) -> None:
        """A torn tail the session's writer sets aside is reported on stderr, with its new name."""
        log = tmp_path / "t.jsonl"
        log.write_bytes(b'{"type":"TranscriptSta')
        client = client_factory("--log", str(log))
        client.handshake()
        assert client.process.stdin is not None
        client.process.stdin.close()
        assert client.process.wait(timeout=5) == 0
        warning = (
            f"[mini-harness] Warning: {log}: 22 bytes at byte 0 were not complete events "
            f"(a torn tail, e.g. left by a crash); moved them to {log}.torn-0"
        )
        assert client.stderr().splitlines()[0] == warning
        assert Path(f"{log}.torn-0").read_bytes() == b'{"type":"TranscriptSta'


TYPED_TOOLS = """
import attrs

from mini_harness import ToolAnnotations, ToolRegistry


@attrs.frozen
class Place:
    x: int


registry = ToolRegistry()


@registry.tool(annotations=ToolAnnotations(read_only_hint=True))
def locate(name: str) -> Place:
    '''Where a named place is.'''
    return Place(x=int(name) if name.isdigit() else name)  # attrs does not check types
"""


async def typed_session(cwd: Path, log: Path, errlog: Path) -> dict[str, Any]:
    """Call a typed tool through the official client, once within its outputSchema and
    once outside it."""
    args = [*SERVER[1:], "--registry", "typedtools:registry", "--log", str(log)]
    # The client starts servers with a few variables only: this checkout's package first.
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=SERVER[0], args=args, cwd=cwd, env=env)
    seen: dict[str, Any] = {}
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()  # the client learns each tool's outputSchema here
            seen["ok"] = await session.call_tool("locate", {"name": "3"})
            seen["broken"] = await session.call_tool("locate", {"name": "three"})
    return seen


class TestOutputSchema:
    def test_a_result_its_schema_refuses_is_an_error_result(self, tmp_path: Path) -> None:
        """A typed tool's result that breaks its own outputSchema reaches the official
        client as an isError result with our message (not as structured content the
        client refuses), and is recorded as invalid_output."""
        (tmp_path / "typedtools.py").write_text(TYPED_TOOLS)
        log, errlog = tmp_path / "t.jsonl", tmp_path / "stderr.txt"
        seen = anyio.run(typed_session, tmp_path, log, errlog)
        assert seen["ok"].is_error is False
        assert seen["ok"].structured_content == {"x": 3}
        broken = seen["broken"]
        assert broken.is_error is True
        assert [c.text for c in broken.content] == [
            "Invalid output for locate.x: expected integer (its outputSchema)"
        ]
        records, _ = read_log(log)
        assert call_events(records)[-1] == ("ToolFailed", "locate", "invalid_output")
