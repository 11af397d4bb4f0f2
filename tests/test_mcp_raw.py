"""`mini-harness mcp` driven with raw JSON-RPC lines over a pipe: every request with a usable
id gets an answer, whatever it holds, and the session survives it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mini_harness.mcp.guard import MAX_LINE_BYTES
from mini_harness.transcripts import TranscriptReader, verify_transcript
from tests.mcp_client import RawClient, registry_options


def call(request_id: Any, arguments: str, name: str = "echo") -> bytes:
    """A tools/call line with `arguments` spliced in as raw JSON text."""
    head = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call"})[:-1]
    return (
        head
        + b',"params":{"name":"'
        + name.encode()
        + b'","arguments":'
        + arguments.encode()
        + b"}}"
    )


@pytest.fixture(name="session")
def _session(tmp_path: Path) -> Any:
    client = RawClient(["--log", str(tmp_path / "t.jsonl")], tmp_path)
    yield client
    client.stop()


def error_of(answer: dict[str, Any]) -> tuple[Any, int, str]:
    return answer["id"], answer["error"]["code"], answer["error"]["message"]


class TestBadToolInput:
    @pytest.mark.parametrize(
        "arguments",
        [
            pytest.param('{"text":' + "[" * 198 + "]" * 198 + "}", id="199-levels"),
            pytest.param('{"text":' + "[" * 400 + "]" * 400 + "}", id="401-levels"),
            pytest.param('{"text":"\\ud800"}', id="lone-surrogate-value"),
            pytest.param('{"\\ud800":"x","text":"a"}', id="lone-surrogate-key"),
            pytest.param('{"text":"a","n":' + "7" * 10_000 + "}", id="10000-digits"),
        ],
    )
    def test_is_an_error_result_and_recorded(
        self, session: RawClient, arguments: str, tmp_path: Path
    ) -> None:
        """Input no tool can take is answered with an isError result, and recorded."""
        session.handshake()
        session.write(call(5, arguments))
        answer = session.receive()
        assert answer["id"] == 5
        assert answer["result"]["isError"] is True
        assert answer["result"]["content"][0]["text"].startswith("Invalid input for echo")
        session.write(call(6, '{"text":"still here"}'))
        assert session.receive()["result"]["structuredContent"] == {"text": "still here"}
        assert session.finish()[0] == 0
        log = tmp_path / "t.jsonl"
        types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
        # The approval policy's decision comes before the call runs (echo: allowed).
        assert types[-5:] == [
            "ToolCalled",
            "ToolFailed",
            "ToolCalled",
            "ApprovalDecided",
            "ToolSucceeded",
        ]
        assert TranscriptReader(log).problems == []


class TestMalformedRequests:
    def test_params_as_a_list(self, session: RawClient) -> None:
        """`params` given as a list is -32602 for that id."""
        session.handshake()
        session.write({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": [1]})
        assert error_of(session.receive()) == (
            7,
            -32602,
            "Invalid params: params must be an object",
        )

    def test_another_jsonrpc_version(self, session: RawClient) -> None:
        """`"jsonrpc": "1.0"` is -32600 for that id."""
        session.handshake()
        session.write({"jsonrpc": "1.0", "id": "a", "method": "tools/list"})
        assert error_of(session.receive()) == (
            "a",
            -32600,
            'Invalid Request: "jsonrpc" must be "2.0"',
        )

    @pytest.mark.parametrize("request_id", [1.5, {"o": 1}, True, None])
    def test_ids_that_cannot_be_used(self, session: RawClient, request_id: Any) -> None:
        """An id that is not a string or an integer is -32600 with a null id."""
        session.handshake()
        session.write({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
        assert error_of(session.receive()) == (
            None,
            -32600,
            "Invalid Request: id must be a string or an integer",
        )
        session.write({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert session.receive()["id"] == 2

    @pytest.mark.parametrize("line", [b"hello", b'{"jsonrpc":"2.0","id":9,', b"NaN"])
    def test_lines_that_are_not_json(self, session: RawClient, line: bytes) -> None:
        """A line that is not JSON is -32700 with a null id, as JSON-RPC 2.0 asks."""
        session.handshake()
        session.write(line)
        answer_id, code, message = error_of(session.receive())
        assert (answer_id, code) == (None, -32700)
        assert message.startswith("Parse error: ")

    def test_a_line_over_the_limit(self, session: RawClient) -> None:
        """A line longer than MAX_LINE_BYTES is -32600 for its id, and the session goes on."""
        session.handshake()
        text = "x" * MAX_LINE_BYTES
        session.write(call(11, orjson.dumps({"text": text}).decode()))
        assert error_of(session.receive(timeout=120)) == (
            11,
            -32600,
            f"Invalid Request: line longer than the limit of {MAX_LINE_BYTES} bytes",
        )
        session.write(call(12, '{"text":"after"}'))
        assert session.receive()["id"] == 12
        code, stderr = session.finish()
        assert code == 0
        assert f"skipped an input line longer than {MAX_LINE_BYTES} bytes" in stderr

    def test_a_call_before_initialize(self, session: RawClient) -> None:
        """tools/call before initialize says the session is not initialised."""
        session.write(call(1, '{"text":"early"}'))
        assert error_of(session.receive()) == (
            1,
            -32600,
            "Invalid Request: the session is not initialised: send initialize before tools/call",
        )


class TestExitingHandlers:
    @pytest.mark.parametrize("tool", ["leave", "agenexit", "genexit"])
    def test_a_handler_exit_ends_the_call_not_the_session(self, tmp_path: Path, tool: str) -> None:
        """A handler raising SystemExit or GeneratorExit gets an isError result; the server
        answers the next call and ends normally at end of input."""
        session = RawClient(registry_options(tmp_path), tmp_path)
        try:
            session.handshake()
            session.write(call(3, "{}", name=tool))
            answer = session.receive()
            assert answer["id"] == 3
            assert answer["result"]["isError"] is True
            session.write(call(4, '{"text":"next"}'))
            assert session.receive()["result"]["structuredContent"] == {"text": "next"}
            code, stderr = session.finish()
            assert code == 0, stderr
            assert "Traceback" not in stderr
        finally:
            session.stop()


class TestSlowClients:
    def test_answers_larger_than_the_pipe_reach_a_slow_reader_whole(
        self, session: RawClient
    ) -> None:
        """Answers of 300 KB, from the SDK and from the guard alike, wait for a client that
        reads late and arrive whole, one per line, none lost."""
        session.handshake()
        text = "x" * 300_000
        sent = []
        for request_id in range(10, 40):
            if request_id % 2:  # a lone surrogate: answered by the guard
                session.write(call(request_id, '{"text":"\\ud800' + text + '"}'))
            else:
                session.write(call(request_id, orjson.dumps({"text": text}).decode()))
            sent.append(request_id)
        time.sleep(1)  # nothing read yet: the pipe is full and the server waits
        answers = [session.receive(timeout=60) for _ in sent]
        assert sorted(answer["id"] for answer in answers) == sent
        assert all(
            answer["result"]["structuredContent"] == {"text": text}
            for answer in answers
            if answer["id"] % 2 == 0
        )
        assert session.finish()[0] == 0

    def test_a_client_that_stops_reading_ends_the_session_without_a_traceback(
        self, session: RawClient, tmp_path: Path
    ) -> None:
        """When the client closes its end while answers are pending (the guard's too), the
        session ends as 'client closed its input', exit 0, with no traceback and a whole log."""
        session.handshake()
        session.write(call(2, orjson.dumps({"text": "y" * 2_000_000}).decode()))
        time.sleep(0.5)
        assert session.process.stdout is not None
        session.process.stdout.close()  # the client stops reading mid-answer
        session.write(call(3, '{"text":"\\ud800"}'), call(4, '{"text":"x"}'))
        code, stderr = session.finish()
        assert code == 0, stderr
        assert "Traceback" not in stderr
        assert "client closed its input" in stderr
        assert verify_transcript(tmp_path / "t.jsonl").ok
