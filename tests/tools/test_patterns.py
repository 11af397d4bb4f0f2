"""search_text's regexes: malformed or oversized patterns are refused before compiling."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness import MemorySink, ToolHandlerError, ToolRuntime
from mini_harness.events import ToolFailed
from mini_harness.tools import default_registry
from mini_harness.tools.patterns import MAX_PATTERN_LENGTH

# 33 characters that the engine would unroll into a billion items (24 GB, then OOM-killed).
CATASTROPHIC = "(?:(?:(?:a{1000}){1000}){1000})"
# Address space for the child processes below: enough for the work, far below the 24 GB
# the catastrophic pattern asks for, so a regression fails fast instead of taking the
# machine's memory.
MEMORY_LIMIT = 2 << 30
LIMITED = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
)


def refusal(runtime: ToolRuntime, query: str) -> str:
    with pytest.raises(ToolHandlerError) as caught:
        runtime.dispatch("search_text", {"query": query, "regex": True})
    return caught.value.message


@pytest.fixture(name="small")
def _small(tmp_path: Path) -> ToolRuntime:
    """A runtime over a workspace holding a date, a UUID and a run of "a"s."""
    (tmp_path / "f.txt").write_text(
        "released 2024-05-17\nid 123e4567-e89b-12d3-a456-426614174000\n" + "a" * 50 + "\n"
    )
    return ToolRuntime(default_registry(tmp_path), MemorySink())


class TestOversizedPatterns:
    def test_nested_counted_repetitions_are_refused_at_once(self, tmp_path: Path) -> None:
        """The 33-character pattern fails as InvalidPatternError in well under a second,
        in a process whose memory is capped far below what compiling it would take."""
        (tmp_path / "f.txt").write_text("aaa\n")
        script = LIMITED + (
            "import time\n"
            "from mini_harness import MemorySink, ToolRuntime, ToolHandlerError\n"
            "from mini_harness.tools import default_registry\n"
            "runtime = ToolRuntime(default_registry('.'), MemorySink())\n"
            "start = time.perf_counter()\n"
            "try:\n"
            f"    runtime.dispatch('search_text', {{'query': {CATASTROPHIC!r}, 'regex': True}})\n"
            "except ToolHandlerError as exc:\n"
            "    print(exc.message)\n"
            "print(time.perf_counter() - start)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        message, seconds = proc.stdout.splitlines()
        assert message == (
            "Tool search_text failed: InvalidPatternError: Regular expression "
            f'"{CATASTROPHIC}" is too large: with its counted repetitions written out it '
            "has over 100,000 items; use smaller counts in {n} or {m,n}, or fewer nested ones"
        )
        assert float(seconds) < 1.0

    @pytest.mark.parametrize(
        "query", ["a{1000000}", "(?:a{2,3}){50000}", "x{400}y{400}" * 100, "(?i)(?:ß{1000}){60}"]
    )
    def test_patterns_that_unroll_too_far_are_refused(self, small: ToolRuntime, query: str) -> None:
        """A single huge count, or many moderate ones in sequence, is refused the same way."""
        assert "is too large: with its counted repetitions written out" in refusal(small, query)

    def test_an_overlong_pattern_is_refused_before_parsing(self, small: ToolRuntime) -> None:
        """A regex longer than the limit is refused by its length alone."""
        message = refusal(small, "a" * (MAX_PATTERN_LENGTH + 1))
        assert message == (
            "Tool search_text failed: InvalidPatternError: Regular expression is 10,001 "
            "characters long; at most 10,000 are accepted"
        )

    def test_deep_nesting_is_an_invalid_pattern(self, small: ToolRuntime) -> None:
        """Groups nested hundreds deep fail as InvalidPatternError, not as a RecursionError."""
        message = refusal(small, "(?:" * 400 + "a" + ")" * 400)
        assert message.startswith("Tool search_text failed: InvalidPatternError: ")
        assert message.endswith(" is nested too deeply")

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            (
                "released \\d{4}-\\d{2}-\\d{2}$",
                [(1, "released 2024-05-17")],
            ),
            (
                "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                [(2, "id 123e4567-e89b-12d3-a456-426614174000")],
            ),
            ("^a{50}$", [(3, "a" * 50)]),
            ("(?:a{5}){10}", [(3, "a" * 50)]),
            ("(?:a|b){1,1000000}$", [(3, "a" * 50)]),  # an upper bound costs nothing
        ],
    )
    def test_ordinary_counted_patterns_still_match(
        self, small: ToolRuntime, query: str, expected: list[tuple[int, str]]
    ) -> None:
        """Dates, UUIDs and nested small counts are far inside the limit and match as before."""
        output: Any = small.dispatch("search_text", {"query": query, "regex": True}).output
        assert [(m["line"], m["text"]) for m in output["matches"]] == expected


class TestDialect:
    def test_version1_flag_is_an_invalid_pattern(self, small: ToolRuntime) -> None:
        """(?V1) asks for the engine's other dialect: refused as InvalidPatternError with the
        engine's reason, not a handler_error ValueError."""
        assert refusal(small, "(?V1)(a|aa)++$") == (
            "Tool search_text failed: InvalidPatternError: Invalid regular expression "
            '"(?V1)(a|aa)++$": VERSION0 and VERSION1 flags are mutually incompatible'
        )

    def test_the_failure_is_recorded_with_its_kind(self, small: ToolRuntime) -> None:
        """The transcript records the refusal as a handler error of type InvalidPatternError."""
        sink = MemorySink()
        runtime = ToolRuntime(small.registry, sink)
        with pytest.raises(ToolHandlerError):
            runtime.dispatch("search_text", {"query": "(?V1)a", "regex": True})
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert (failed.error.kind, failed.error.type) == ("handler_error", "InvalidPatternError")


class TestServer:
    def test_the_mcp_server_answers_after_a_catastrophic_pattern(self, tmp_path: Path) -> None:
        """Under `mini-harness mcp` the pattern is an isError result and the next call is
        answered by the same process."""
        (tmp_path / "f.txt").write_text("hello\n")
        script = LIMITED + (
            "sys.argv = ['mini-harness', 'mcp']\n"
            "runpy.run_module('mini_harness', run_name='__main__')\n"
        )
        server = subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        stdin, stdout = server.stdin, server.stdout
        assert stdin is not None
        assert stdout is not None

        def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            stdin.write(orjson.dumps(message) + b"\n")
            stdin.flush()
            answer: dict[str, Any] = orjson.loads(stdout.readline())
            assert answer["id"] == request_id
            return answer

        try:
            call(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            )
            stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            start = time.perf_counter()
            bad = call(
                2,
                "tools/call",
                {"name": "search_text", "arguments": {"query": CATASTROPHIC, "regex": True}},
            )
            assert time.perf_counter() - start < 5
            assert bad["result"]["isError"] is True
            assert "InvalidPatternError" in bad["result"]["content"][0]["text"]
            good = call(
                3,
                "tools/call",
                {"name": "search_text", "arguments": {"query": "hel+o", "regex": True}},
            )
            assert good["result"]["structuredContent"]["count"] == 1
        finally:
            server.kill()
            server.communicate()
