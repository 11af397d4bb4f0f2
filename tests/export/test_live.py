"""`--otel`: a run's spans sent to a loopback collector as the run goes, the same spans
`export otel` makes of its transcript; a collector that cannot be reached, or is slow,
never slows the run or fails it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import mini_harness
from mini_harness.export.live import CLOSE_GRACE
from tests.agent.recorded_runs import LIST_READ_ANSWER, invoke, write_script
from tests.export.collector import Collector, attributes, span_key
from tests.mcp_client import RawClient


def _cli(
    args: list[str], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the console script in a process of its own; its result and wall time."""
    source = str(Path(mini_harness.__file__).parents[1])
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mini_harness", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": source, **env},
    )  # fmt: skip
    return done, time.monotonic() - start


class TestLive:
    def test_live_spans_are_those_of_the_transcript(
        self, readme_ws: Path, tmp_path: Path, collector: Collector
    ) -> None:
        """The spans `run --otel` sends as it goes are exactly those `export otel` makes
        of its transcript afterwards; `resume --otel` sends its own run, linked to it."""
        log = tmp_path / "t.jsonl"
        model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)
        env: dict[str, str | None] = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint}
        ran = invoke(["run", "What is it?", "--model", model, "--log", str(log), "--otel"], env)
        assert ran.exit_code == 0, ran.output
        assert "Warning" not in ran.output
        live = collector.spans()
        assert [span.name for span in live if not span.parent_span_id] == [
            "invoke_agent mini-harness"
        ]
        assert len(live) == 1 + 3 + 2 * 2  # the run, 3 requests, 2 calls and their approvals
        exported = invoke(["export", "otel", str(log), "--endpoint", collector.endpoint])
        assert exported.exit_code == 0, exported.output
        assert sorted(map(span_key, collector.spans()[len(live) :])) == sorted(map(span_key, live))

        more = write_script(tmp_path / "more.json", [{"text": "Nothing more."}])
        resumed = invoke(["resume", str(log), "And?", "--model", more, "--otel"], env)
        assert resumed.exit_code == 0, resumed.output
        runs = [span for span in collector.spans() if not span.parent_span_id]
        assert [link.trace_id for link in runs[-1].links] == [live[-1].trace_id]

    def test_the_environment_alone_turns_it_on(
        self, readme_ws: Path, tmp_path: Path, collector: Collector
    ) -> None:
        """With OTEL_EXPORTER_OTLP_ENDPOINT set, a run is exported without --otel; with
        OTEL_SDK_DISABLED=true it is not."""
        model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)
        env: dict[str, str | None] = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint.removesuffix("/v1/traces")
        }
        assert invoke(["run", "What is it?", "--model", model], env).exit_code == 0
        assert len(collector.spans()) == 8
        off: dict[str, str | None] = {**env, "OTEL_SDK_DISABLED": "true"}
        assert invoke(["run", "What is it?", "--model", model], off).exit_code == 0
        assert len(collector.spans()) == 8

    def test_without_the_extra(
        self, readme_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the SDK, `--otel` is exit 2 with the install line before anything runs;
        an endpoint in the environment alone is one warning, and the run goes on."""
        monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
        model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)
        log = tmp_path / "t.jsonl"
        refused = invoke(["run", "What is it?", "--model", model, "--log", str(log), "--otel"])
        assert refused.exit_code == 2
        assert 'pip install "mini-harness[otel]"' in refused.output
        assert "Step 1" not in refused.output
        env: dict[str, str | None] = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
        ran = invoke(["run", "What is it?", "--model", model], env)
        assert ran.exit_code == 0, ran.output
        warnings = [line for line in ran.output.splitlines() if "Warning" in line]
        assert len(warnings) == 1
        assert warnings[0].endswith("; the run is not exported (an OTLP endpoint is set)")

    def test_spans_are_redacted_as_the_log(
        self, readme_ws: Path, tmp_path: Path, collector: Collector
    ) -> None:
        """What the log redacts (--redact-pattern) never reaches the collector either,
        message content included."""
        model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)
        env: dict[str, str | None] = {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint,
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        }
        args = ["run", "What is tiny?", "--model", model, "--redact-pattern", "tiny", "--otel"]
        assert invoke(args, env).exit_code == 0
        values = [str(v) for span in collector.spans() for v in attributes(span).values()]
        assert any("[REDACTED]" in value for value in values)
        assert not any("tiny" in value for value in values)

    def test_mcp_session(
        self, tmp_path: Path, collector: Collector, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`mcp --otel`: the session is a mini_harness.run span with its calls under it."""
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("PYTHONPATH", str(Path(mini_harness.__file__).parents[1]))
        client = RawClient(["--otel", "--approve", "auto"], cwd=tmp_path)
        try:
            client.handshake()
            said = client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
            assert said["result"]["structuredContent"] == {"text": "hi"}
            code, stderr = client.finish()
        finally:
            client.stop()
        assert code == 0, stderr
        assert "Warning" not in stderr
        names = [span.name for span in collector.spans()]
        assert sorted(names) == [
            "execute_tool echo",
            "mini_harness.approval echo",
            "mini_harness.run",
        ]


class TestCollectorTrouble:
    @pytest.fixture(name="timed")
    def _timed(self, readme_ws: Path, tmp_path: Path) -> Any:
        """Run the three-step script in a process of its own; its result, wall time and
        the run's own duration as recorded."""
        model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)

        def run(env: dict[str, str], *flags: str) -> tuple[Any, float, float]:
            log = tmp_path / f"t{time.monotonic_ns()}.jsonl"
            args = ["run", "What is it?", "--model", model, "--log", str(log), *flags]
            done, wall = _cli(args, readme_ws, env)
            events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
            started, finished = events[1]["ts"], events[-1]["ts"]
            recorded = _seconds(finished) - _seconds(started)
            return done, wall, recorded

        return run

    def test_an_unreachable_collector(self, timed: Any, collector: Collector) -> None:
        """A collector that refuses connections: the run succeeds, one warning says so, and
        the command takes about what it takes with a collector that answers at once."""
        _, healthy, _ = timed({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint}, "--otel")
        assert len(collector.spans()) == 8
        done, wall, _ = timed({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, "--otel")
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(
            "[mini-harness] Warning: OpenTelemetry export to http://127.0.0.1:9/v1/traces: "
        )
        assert "Connection refused" in lines[0]
        assert lines[0].endswith("(the run goes on without it)")
        assert wall < healthy + 1.0, (wall, healthy)

    def test_a_slow_collector(self, timed: Any, collector: Collector) -> None:
        """A collector that takes 5 s to answer each request, while spans are sent every
        millisecond: the run itself is not slowed, the command waits at most the grace for
        the last spans, and says once that some did not get there."""
        _, healthy, _ = timed({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint}, "--otel")
        with Collector(delay=5) as slow:
            env = {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": slow.endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "1",
            }
            done, wall, recorded = timed(env, "--otel")
        assert done.returncode == 0, done.stderr
        assert recorded < 1.0
        assert wall < healthy + CLOSE_GRACE + 1.0, (wall, healthy)
        (line,) = done.stderr.splitlines()
        assert "spans did not reach the collector at" in line


def _seconds(ts: str) -> float:
    from mini_harness.export.spans import time_ns

    return time_ns(ts) / 1e9
