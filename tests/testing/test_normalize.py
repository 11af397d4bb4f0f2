"""Normalization: volatile values become placeholders and golden transcripts stay valid."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
from mini_harness.cli import cli
from mini_harness.errors import NormalizationError, ToolCallError
from mini_harness.runtime import MemorySink, ToolRegistry, ToolRuntime
from mini_harness.testing import TS_PLACEHOLDER, Normalization
from mini_harness.testing.golden import _memory_bytes
from mini_harness.testing.normalize import mask_prev
from mini_harness.transcripts import JsonlTranscript, TranscriptReader


def record(path: Path, registry: ToolRegistry, runs: Calls) -> bytes:
    """Write one transcript of several runs and return its bytes."""
    with JsonlTranscript(path) as log:
        for calls in runs:
            runtime = ToolRuntime(registry, log)
            for name, tool_input in calls:
                with contextlib.suppress(ToolCallError):
                    runtime.dispatch(name, tool_input)
    return path.read_bytes()


Calls = list[list[tuple[str, object]]]
SCENARIO: Calls = [
    [("echo", {"text": "a"}), ("boom", {}), ("add", {"a": 1})],
    [("echo", {"text": "b"})],
]


def lines(data: bytes) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in data.splitlines()]


class TestTranscript:
    def test_ids_are_numbered_by_first_appearance(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Run and call ids become run-N / call-N in order of appearance, across runs."""
        data = Normalization().transcript(record(tmp_path / "t.jsonl", registry, SCENARIO))
        events = lines(data)
        assert events[0]["transcriptId"] == "transcript-1"
        assert [e.get("runId") for e in events[1:]] == ["run-1"] * 7 + ["run-2"] * 3
        calls = [e["callId"] for e in events if "callId" in e]
        assert calls == [f"call-{n}" for n in (1, 1, 2, 2, 3, 3, 4, 4)]

    def test_volatile_envelope_fields(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """ts, durationMs and the harness version get fixed placeholders."""
        events = lines(Normalization().transcript(record(tmp_path / "t.jsonl", registry, SCENARIO)))
        assert {e["ts"] for e in events} == {TS_PLACEHOLDER}
        assert {e["durationMs"] for e in events if "durationMs" in e} == {0}
        assert {e["harness"] for e in events if "harness" in e} == {"<harness>"}

    def test_chain_is_recomputed(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """A normalized transcript verifies: seq dense, every prev matches the line before."""
        out = tmp_path / "golden.jsonl"
        out.write_bytes(
            Normalization().transcript(record(tmp_path / "t.jsonl", registry, SCENARIO))
        )
        reader = TranscriptReader(out)
        assert len(list(reader)) == 11
        assert reader.problems == []
        assert "prev" not in lines(out.read_bytes())[0]

    def test_same_scenario_twice_is_identical(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """Two recordings of one scenario (other ids, times, durations) normalize alike."""
        first = record(tmp_path / "a.jsonl", registry, SCENARIO)
        second = record(tmp_path / "b.jsonl", registry, SCENARIO)
        assert first != second
        normalization = Normalization()
        assert normalization.transcript(first) == normalization.transcript(second)

    def test_agent_runs_with_other_ids_normalize_alike(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Two agent runs that differ only in their ids (request ids, the model's tool call
        ids) normalize alike, the ids numbered where the events declare them
        and nowhere else: a tool's input that happens to hold an id keeps it."""

        def agent_run(name: str, call_id: str) -> bytes:
            script = tmp_path / "script.json"  # one path: the run records it as its model
            call = {"id": call_id, "name": "echo", "arguments": {"text": "call_kept"}}
            script.write_bytes(orjson.dumps([{"toolCalls": [call]}, {"text": "done"}]))
            with JsonlTranscript(tmp_path / f"{name}.jsonl") as log:
                config = AgentConfig(task="t", system_prompt="s")
                AgentLoop(ToolRuntime(registry, log), ScriptProvider(script), config).run()
            return (tmp_path / f"{name}.jsonl").read_bytes()

        first = agent_run("a", "call_kept")
        second = agent_run("b", "toolu_01XYZ")
        normalization = Normalization()
        assert normalization.transcript(first) == normalization.transcript(second)
        events = lines(normalization.transcript(first))
        called = next(e for e in events if e["type"] == "ToolCalled")
        assert called["toolUseId"] == "toolCall-1"
        assert called["input"] == {"text": "call_kept"}
        requests = [e for e in events if e["type"] == "ModelRequested"]
        assert [e["requestId"] for e in requests] == ["request-1", "request-2"]
        asked, answered = orjson.loads(orjson.dumps(requests[1]["messages"]))
        assert asked["toolCalls"][0]["id"] == "toolCall-1"
        assert answered["toolCallId"] == "toolCall-1"

    def test_normalizing_is_idempotent(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """Normalizing a golden again changes nothing."""
        normalization = Normalization()
        once = normalization.transcript(record(tmp_path / "t.jsonl", registry, SCENARIO))
        assert normalization.transcript(once) == once

    def test_memory_sink_matches_file(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """A MemorySink's events normalize to the same golden as the file of one run."""
        sink = MemorySink()
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("echo", {"text": "a"})
        file_data = record(tmp_path / "t.jsonl", registry, [[("echo", {"text": "a"})]])
        normalization = Normalization()
        assert normalization.transcript(_memory_bytes(sink)) == normalization.transcript(file_data)

    def test_paths_and_scrubs_reach_nested_strings(self) -> None:
        """Paths and scrubs apply to every string value and key, at any depth."""
        data = (
            b'{"type":"TranscriptStarted","seq":0,"ts":"x","format":"f","version":1,'
            b'"transcriptId":"t"}\n'
            b'{"type":"ToolSucceeded","seq":1,"ts":"x","prev":"p","output":'
            b'{"/w/x/a.txt":["at /w/x/b", {"pid":"pid 4242"}]}}\n'
        )
        normalization = Normalization().with_path("/w/x", "<ws>").with_scrub(r"pid \d+", "pid N")
        output = lines(normalization.transcript(data))[1]["output"]
        assert output == {"<ws>/a.txt": ["at <ws>/b", {"pid": "pid N"}]}

    def test_user_fields(self) -> None:
        """with_field replaces a key's value anywhere; numbered fields keep relations."""
        data = (
            b'{"type":"TranscriptStarted","seq":0,"ts":"x","transcriptId":"t"}\n'
            b'{"type":"X","seq":1,"ts":"x","output":{"token":"abc","at":5,"items":'
            b'[{"token":"def"},{"token":"abc"}]}}\n'
        )
        normalization = Normalization().with_field("token", numbered=True).with_field("at")
        output = lines(normalization.transcript(data))[1]["output"]
        assert output == {
            "token": "token-1",
            "at": "<at>",
            "items": [{"token": "token-2"}, {"token": "token-1"}],
        }

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b'{"type":"A"}\nnot json\n', "transcript line 2 is not JSON"),
            (b"[1]\n", "transcript line 1 is not a JSON object"),
            (b'{"type":"A"}\n{"ty', "does not end with a newline"),
        ],
    )
    def test_not_a_transcript(self, data: bytes, message: str) -> None:
        """Input that is not JSONL is refused with the line that is wrong."""
        with pytest.raises(NormalizationError, match=message):
            Normalization().transcript(data)

    def test_text_is_normalized_like_its_bytes(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """A transcript given as str normalizes to the same bytes as the file's bytes."""
        data = record(tmp_path / "t.jsonl", registry, SCENARIO)
        normalization = Normalization()
        assert normalization.transcript(data.decode()) == normalization.transcript(data)

    def test_other_types_are_refused_by_name(self) -> None:
        """Anything but bytes or str is a TypeError that says what it takes."""
        with pytest.raises(TypeError, match="takes the transcript as bytes or str, not list"):
            Normalization().transcript([b"{}"])  # type: ignore[arg-type]

    def test_too_deep_a_line_is_named(self) -> None:
        """A line nested past the one depth limit is refused as the reader refuses it."""
        line = b'{"type":"A","x":' + b"[" * 150 + b"]" * 150 + b"}\n"
        with pytest.raises(NormalizationError, match="line 1 is nested deeper than 100 levels"):
            Normalization().transcript(line)


class TestText:
    def test_cli_output_twice_is_identical(self, tmp_path: Path) -> None:
        """Two CLI runs with --log print different ids and normalize to the same text."""
        normalization = Normalization().with_path(tmp_path, "<tmp>")
        outputs = []
        for _ in range(2):
            args = ["--tool", "echo", "--tool-input", '{"text":"x"}', "--log", str(tmp_path / "t")]
            outputs.append(CliRunner().invoke(cli, args).stdout)
        assert outputs[0] != outputs[1]
        assert normalization.text(outputs[0]) == normalization.text(outputs[1])
        assert "Transcript: <tmp>/t (run <id-1>)" in normalization.text(outputs[0])

    def test_builtin_patterns(self) -> None:
        """Timestamps, durations (compact or indented JSON), run and call ids get placeholders."""
        run_a, run_b = "a" * 32, "0123456789abcdef" * 2
        text = (
            f"at 2026-01-02T03:04:05.123456Z run {run_a} then {run_b} then {run_a}\n"
            f"calls {run_b[:12]}-1 {run_b[:12]}-2 {run_b[:12]}-1\n"
            '{"durationMs":12.5} {"durationMs": 3}\n'
        )
        assert Normalization().text(text) == (
            "at <ts> run <id-1> then <id-2> then <id-1>\n"
            "calls <call-1> <call-2> <call-1>\n"
            '{"durationMs":0} {"durationMs": 0}\n'
        )

    def test_without_hex_ids(self) -> None:
        """without_hex_ids keeps 32-hex-digit strings such as digests."""
        digest = "d41d8cd98f00b204e9800998ecf8427e"
        assert Normalization().without_hex_ids().text(digest) == digest

    def test_longest_path_first(self) -> None:
        """A path inside another path is replaced by its own, more specific placeholder."""
        normalization = Normalization().with_path("/b", "<base>").with_path("/b/t", "<tmp>")
        assert normalization.text("/b/t/x /b/y") == "<tmp>/x <base>/y"

    def test_mask_prev(self) -> None:
        """Diffs of transcripts hide prev hashes so that one change shows as one line."""
        assert mask_prev(['{"seq":1,"prev":"abc","x":1}']) == ['{"seq":1,"prev":"…","x":1}']
