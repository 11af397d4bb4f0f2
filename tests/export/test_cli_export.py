"""`mini-harness export otel`: transcripts sent to a loopback OTLP/HTTP collector (which
decodes the protobuf requests), or printed as OTLP JSON."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.agent.recorded_runs import invoke
from tests.export.collector import Collector, attributes, span_key
from tests.export.scenario import build


@pytest.fixture(name="scenario", scope="module")
def _scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return build(tmp_path_factory.mktemp("otel-cli"))


class TestSend:
    def test_the_collector_receives_the_runs(
        self, scenario: tuple[Path, dict[str, str]], collector: Collector
    ) -> None:
        """Every span of every run reaches the collector as OTLP protobuf, each run a trace
        whose id is its run id, from the service mini-harness."""
        path, ids = scenario
        result = invoke(["export", "otel", str(path), "--endpoint", collector.endpoint])
        assert result.exit_code == 0, result.output
        spans = collector.spans()
        assert result.output == (
            f"[mini-harness] Sent {len(spans)} spans of 3 runs (1 transcript) to "
            f"{collector.endpoint}\n"
        )
        assert {span.trace_id.hex() for span in spans} == set(ids.values())
        roots = [span.name for span in spans if not span.parent_span_id]
        assert roots == ["invoke_agent mini-harness"] * 3
        resource = collector.requests[0].resource_spans[0].resource
        service = {item.key: item.value.string_value for item in resource.attributes}
        assert (service["service.name"], service["service.version"]) == ("mini-harness", "0.1.0")

    def test_a_second_export_gives_the_same_spans(
        self, scenario: tuple[Path, dict[str, str]], collector: Collector
    ) -> None:
        """Exporting the transcript again sends the very same spans (ids, times,
        attributes): a collector that deduplicates stores them once."""
        path, _ = scenario
        for _ in range(2):
            result = invoke(["export", "otel", str(path), "--endpoint", collector.endpoint])
            assert result.exit_code == 0, result.output
        spans = collector.spans()
        half = len(spans) // 2
        assert half > 0
        assert sorted(map(span_key, spans[:half])) == sorted(map(span_key, spans[half:]))

    def test_the_standard_variables(
        self, scenario: tuple[Path, dict[str, str]], collector: Collector
    ) -> None:
        """OTEL_EXPORTER_OTLP_ENDPOINT (a base URL), OTEL_EXPORTER_OTLP_HEADERS and
        OTEL_SERVICE_NAME work as in every OpenTelemetry SDK; --headers adds to them."""
        path, _ = scenario
        base = collector.endpoint.removesuffix("/v1/traces")
        env: dict[str, str | None] = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": base,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=agents",
            "OTEL_SERVICE_NAME": "my-agents",
        }
        result = invoke(["export", "otel", str(path), "--headers", "x-token=s3cret"], env=env)
        assert result.exit_code == 0, result.output
        assert collector.headers[0]["x-team"] == "agents"
        assert collector.headers[0]["x-token"] == "s3cret"
        assert "s3cret" not in result.output
        resource = collector.requests[0].resource_spans[0].resource
        service = {item.key: item.value.string_value for item in resource.attributes}
        assert service["service.name"] == "my-agents"

    def test_content_with_the_conventions_variable(
        self, scenario: tuple[Path, dict[str, str]], collector: Collector
    ) -> None:
        """The conventions' opt-in variable asks for message content as --content does."""
        path, _ = scenario
        env: dict[str, str | None] = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
        result = invoke(["export", "otel", str(path), "--endpoint", collector.endpoint], env=env)
        assert result.exit_code == 0, result.output
        said = [attributes(span).get("gen_ai.input.messages") for span in collector.spans()]
        assert any(said)

    def test_an_unreachable_collector(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """A collector that cannot be reached is exit 1 and one error line that says where
        and why; the exporter's own log lines never reach the terminal."""
        path, _ = scenario
        start = time.monotonic()
        result = invoke(
            ["export", "otel", str(path), "--endpoint", "http://127.0.0.1:9"],
            env={"OTEL_EXPORTER_OTLP_TIMEOUT": "1"},
        )
        assert result.exit_code == 1
        lines = result.output.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(
            "[mini-harness] Error: the collector at http://127.0.0.1:9/v1/traces did not take "
            "the spans: "
        )
        assert time.monotonic() - start < 5


class TestJson:
    def test_json_is_otlp_json(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """--json prints one OTLP/JSON request: hex ids, numeric kinds, the same document
        each time."""
        path, ids = scenario
        first = invoke(["export", "otel", str(path), "--json"])
        assert first.exit_code == 0, first.output
        again = invoke(["export", "otel", str(path), "--json"])
        assert first.output == again.output
        document = orjson.loads(first.output)
        (resource,) = document["resourceSpans"]
        (scope,) = resource["scopeSpans"]
        assert scope["scope"] == {"name": "mini_harness", "version": "0.1.0"}
        roots = [span for span in scope["spans"] if "parentSpanId" not in span]
        assert [span["traceId"] for span in roots] == list(ids.values())
        assert {span["kind"] for span in scope["spans"]} == {1, 3}  # INTERNAL, CLIENT
        errors = [span["name"] for span in scope["spans"] if span["status"].get("code") == 2]
        assert errors == [
            "execute_tool read_file",
            "execute_tool note",
            "invoke_agent mini-harness",
            "chat fork.json",
        ]

    def test_directories_and_globs(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """A directory exports every *.jsonl below it, as `replay` reads a corpus."""
        path, ids = scenario
        result = invoke(["export", "otel", str(path.parent), "--json"])
        assert result.exit_code == 0, result.output
        spans = orjson.loads(result.output)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert {span["traceId"] for span in spans} == set(ids.values())

    def test_the_session_store_and_run_ids(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without PATH the whole session store is exported; a stored run's id (or a
        prefix of it) names its transcript."""
        monkeypatch.chdir(tmp_path)
        ran = [invoke(["run", task, "--json"]) for task in ("one", "two")]
        run_ids = [orjson.loads(result.stdout)["runId"] for result in ran]
        every = invoke(["export", "otel", "--json"])
        assert every.exit_code == 0, every.output
        spans = orjson.loads(every.output)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert {span["traceId"] for span in spans} == set(run_ids)
        one = invoke(["export", "otel", run_ids[1][:8], "--json"])
        assert one.exit_code == 0, one.output
        spans = orjson.loads(one.output)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert {span["traceId"] for span in spans} == {run_ids[1]}


class TestUsage:
    def test_without_the_extra(
        self, scenario: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the OpenTelemetry SDK the command is exit 2 and says how to install it."""
        path, _ = scenario
        monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
        result = invoke(["export", "otel", str(path), "--json"])
        assert result.exit_code == 2
        assert 'pip install "mini-harness[otel]"' in result.output

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["nowhere.jsonl"], "cannot read transcript nowhere.jsonl: No such file or directory"),
            (["T", "--json", "--endpoint", "http://x"], "--json prints the spans instead"),
            (["T", "--endpoint", "ftp://x"], "is not an http:// or https:// URL"),
            (["T", "--headers", "novalue"], "--headers takes NAME=VALUE, not 'novalue'"),
        ],
    )
    def test_bad_input_is_exit_2(
        self, scenario: tuple[Path, dict[str, str]], args: list[str], message: str
    ) -> None:
        """A path that names nothing, --json with a collector, a URL that is not http, a
        header without a value: exit 2 and one error line."""
        path, _ = scenario
        result = invoke(["export", "otel", *[str(path) if a == "T" else a for a in args]])
        assert result.exit_code == 2
        assert message in result.output
        assert "Traceback" not in result.output
