"""The spans of a transcript, as the OpenTelemetry SDK's in-memory exporter receives them:
the tree, names, kinds, attributes, events, links and statuses (docs/otel.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mini_harness.export.mapping import history_spans
from mini_harness.export.otlp import readable_spans
from mini_harness.export.spans import span_id, time_ns, trace_id
from mini_harness.replay.history import read_history
from tests.export.scenario import build

# The ids of spans and runs vary with each build: attributes holding them are checked
# by the tests of ids, not here.
_IDS = {
    "mini_harness.run.id",
    "mini_harness.request.id",
    "mini_harness.call.id",
    "mini_harness.policy.sha256",
    "mini_harness.call.duration_ms",
    "gen_ai.conversation.id",
}


@pytest.fixture(name="scenario", scope="module")
def _scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return build(tmp_path_factory.mktemp("otel"))


def exported(path: Path, *, content: bool = False) -> list[ReadableSpan]:
    """The spans of the transcript at `path`, through the SDK's in-memory exporter."""
    exporter = InMemorySpanExporter()
    history = read_history(path, requests=True, detail=True)
    exporter.export(readable_spans(history_spans(history, content=content)))
    return list(exporter.get_finished_spans())


def tree(spans: list[ReadableSpan]) -> list[tuple[Any, ...]]:
    """Each span as (name, kind, its parent's name, status, description, attributes but
    ids, events)."""
    names = {span.context.span_id: span.name for span in spans}
    return [
        (
            span.name,
            span.kind.name,
            names[span.parent.span_id] if span.parent is not None else None,
            span.status.status_code.name,
            span.status.description,
            {k: v for k, v in (span.attributes or {}).items() if k not in _IDS},
            [(event.name, dict(event.attributes or {})) for event in span.events],
        )
        for span in spans
    ]


RUN = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "mini-harness"}
VERSION = {"mini_harness.version": "0.1.0", "gen_ai.agent.version": "0.1.0"}
DEMO = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "demo-model"}
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.temperature": 0.2}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.type": "function"}
READ_ONLY = {
    "mini_harness.approval.asked": False,
    "mini_harness.approval.rule": "default: read-only tools are allowed (readOnly true): allow",
    "mini_harness.approval.decision": "approved",
    "mini_harness.approval.by": "policy",
}
NEVER = "--approve never, over default: tools that are not read-only ask: ask"
DENIED = (
    f"Call to note denied by the approval policy ({NEVER}). It did not run; do not retry it "
    "unchanged."
)


def script(name: str) -> dict[str, str]:
    return {"gen_ai.provider.name": "script", "gen_ai.request.model": name}


class TestSpanTree:
    def test_the_first_run(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """An agent run is invoke_agent over a chat span per model request (the retried
        one with its failed attempt, the one after a trim with the trim) and an
        execute_tool span per call, each with its approval under it: a failed call and a
        denied one are errors of their kind."""
        path, _ = scenario
        agent = "invoke_agent mini-harness"
        usage = {"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}
        first = tree(exported(path))[:12]
        assert first == [
            (agent, "INTERNAL", None, "UNSET", None, {
                **VERSION, **RUN, **DEMO,
                "gen_ai.usage.input_tokens": 370,
                "gen_ai.usage.output_tokens": 27,
                "gen_ai.usage.cache_read.input_tokens": 50,
                "mini_harness.steps": 3,
                "mini_harness.max_steps": 10,
                "mini_harness.stop_reason": "final",
            }, []),
            ("chat demo-model", "CLIENT", agent, "UNSET", None, {
                **CHAT, **DEMO, "mini_harness.step": 1,
                "gen_ai.response.finish_reasons": ("tool_calls",),
                **usage,
                "gen_ai.response.id": "script-1",
            }, []),
            ("chat demo-model", "CLIENT", agent, "UNSET", None, {
                **CHAT, **DEMO, "mini_harness.step": 2,
                "gen_ai.response.finish_reasons": ("tool_calls",),
                "gen_ai.usage.input_tokens": 150,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.usage.cache_read.input_tokens": 50,
                "gen_ai.response.id": "script-2",
            }, [("exception", {
                "exception.type": "rate_limited",
                "exception.message": "slow down",
                "http.response.status_code": 429,
                "mini_harness.attempt": 1,
            })]),
            ("chat demo-model", "CLIENT", agent, "UNSET", None, {
                **CHAT, **DEMO, "mini_harness.step": 3,
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.response.id": "script-3",
            }, [("mini_harness.context_trimmed", {
                "mini_harness.trim.messages": 2,
                "mini_harness.trim.tokens_before": 8568,
                "mini_harness.trim.tokens_after": 5165,
                "mini_harness.trim.budget": 7000,
                "mini_harness.trim.tool_call_ids": ("call_1_1", "call_1_2"),
            })]),
            ("execute_tool read_file", "INTERNAL", agent, "ERROR",
             'Tool read_file failed: WorkspaceError: Path "missing.txt" does not exist', {
                **TOOL, "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call_1_1",
                "mini_harness.call.status": "failed", "mini_harness.step": 1,
                "error.type": "handler_error",
            }, []),
            ("mini_harness.approval read_file", "INTERNAL", "execute_tool read_file", "UNSET",
             None, READ_ONLY, []),
            ("execute_tool read_file", "INTERNAL", agent, "UNSET", None, {
                **TOOL, "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call_1_2",
                "mini_harness.call.status": "succeeded", "mini_harness.step": 1,
            }, []),
            ("mini_harness.approval read_file", "INTERNAL", "execute_tool read_file", "UNSET",
             None, READ_ONLY, []),
            ("execute_tool note", "INTERNAL", agent, "ERROR", DENIED, {
                **TOOL, "gen_ai.tool.name": "note", "gen_ai.tool.call.id": "call_2_1",
                "mini_harness.call.status": "failed", "mini_harness.step": 2,
                "error.type": "denied",
            }, []),
            ("mini_harness.approval note", "INTERNAL", "execute_tool note", "UNSET", None, {
                "mini_harness.approval.asked": False,
                "mini_harness.approval.rule": NEVER,
                "mini_harness.approval.decision": "denied",
                "mini_harness.approval.by": "policy",
                "mini_harness.approval.reason": DENIED,
            }, []),
            ("execute_tool read_file", "INTERNAL", agent, "UNSET", None, {
                **TOOL, "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call_2_2",
                "mini_harness.call.status": "succeeded", "mini_harness.step": 2,
            }, []),
            ("mini_harness.approval read_file", "INTERNAL", "execute_tool read_file", "UNSET",
             None, READ_ONLY, []),
        ]  # fmt: skip

    def test_the_resumed_and_forked_runs(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """A run that resumes or forks another is a trace of its own, linked to the run
        it continues; a run that ended without an answer is an error of its stop reason,
        and so is the request that failed for good."""
        path, ids = scenario
        spans = exported(path)
        agent = "invoke_agent mini-harness"
        assert tree(spans)[12:] == [
            (agent, "INTERNAL", None, "UNSET", None, {
                **VERSION, **RUN, **script("more.json"),
                "mini_harness.steps": 1,
                "mini_harness.max_steps": 10,
                "mini_harness.stop_reason": "final",
            }, []),
            ("chat more.json", "CLIENT", agent, "UNSET", None, {
                **CHAT, **script("more.json"), "mini_harness.step": 1,
                "gen_ai.response.finish_reasons": ("stop",),
                "gen_ai.response.id": "script-1",
            }, []),
            (agent, "INTERNAL", None, "ERROR",
             "the run ended without a final answer (model_error)", {
                **VERSION, **RUN, **script("fork.json"),
                "mini_harness.steps": 2,
                "mini_harness.max_steps": 10,
                "mini_harness.stop_reason": "model_error",
                "error.type": "model_error",
            }, []),
            ("chat fork.json", "CLIENT", agent, "UNSET", None, {
                **CHAT, **script("fork.json"), "mini_harness.step": 1,
                "gen_ai.response.finish_reasons": ("tool_calls",),
                "gen_ai.response.id": "script-1",
            }, []),
            ("chat fork.json", "CLIENT", agent, "ERROR",
             f"script {path.parent / 'fork.json'} has 1 response; the run asked for response 2",
             {**CHAT, **script("fork.json"), "mini_harness.step": 2,
              "error.type": "invalid_response"},
             [("exception", {
                "exception.type": "invalid_response",
                "exception.message": f"script {path.parent / 'fork.json'} has 1 response; "
                "the run asked for response 2",
                "mini_harness.attempt": 1,
             })]),
            ("execute_tool list_files", "INTERNAL", agent, "UNSET", None, {
                # The fork's history holds a call_1_1 already: the loop made the id unique.
                **TOOL, "gen_ai.tool.name": "list_files", "gen_ai.tool.call.id": "call_1_1-2",
                "mini_harness.call.status": "succeeded", "mini_harness.step": 1,
            }, []),
            ("mini_harness.approval list_files", "INTERNAL", "execute_tool list_files", "UNSET",
             None, READ_ONLY, []),
        ]  # fmt: skip
        roots = [span for span in spans if span.parent is None]
        assert [format(span.context.trace_id, "032x") for span in roots] == list(ids.values())
        first, resumed, forked = roots
        assert [(link.context.trace_id, link.context.span_id) for link in resumed.links] == [
            (first.context.trace_id, first.context.span_id)
        ]
        assert dict(resumed.links[0].attributes or {}) == {
            "mini_harness.link.type": "resumed",
            "mini_harness.link.step": 3,
        }
        assert [(link.context.trace_id, link.context.span_id) for link in forked.links] == [
            (first.context.trace_id, first.context.span_id)
        ]
        assert dict(forked.links[0].attributes or {}) == {
            "mini_harness.link.type": "forked",
            "mini_harness.link.step": 2,
        }

    def test_ids_and_times_come_from_the_transcript(
        self, scenario: tuple[Path, dict[str, str]]
    ) -> None:
        """The trace id is the run id; every span of a run is in its trace; a span's id is
        the hash of what it stands for; times are the recorded timestamps; one
        conversation id (the transcript's) for every run of the file."""
        path, ids = scenario
        events = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        spans = exported(path)
        by_trace: dict[int, list[ReadableSpan]] = {}
        for span in spans:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        assert sorted(by_trace) == sorted(int(run_id, 16) for run_id in ids.values())
        first = ids["first"]
        started = next(e for e in events if e["type"] == "RunStarted")
        finished = next(e for e in events if e["type"] == "RunFinished")
        root = by_trace[int(first, 16)][0]
        assert root.context.span_id == span_id("run", first)
        assert (root.start_time, root.end_time) == (time_ns(started["ts"]), time_ns(finished["ts"]))
        requested = [e for e in events if e["type"] == "ModelRequested" and e["runId"] == first]
        chats = [s for s in by_trace[int(first, 16)] if s.name.startswith("chat")]
        assert [s.context.span_id for s in chats] == [
            span_id("request", first, e["requestId"]) for e in requested
        ]
        assert [s.start_time for s in chats] == [time_ns(e["ts"]) for e in requested]
        transcript = events[0]["transcriptId"]
        assert {(s.attributes or {}).get("gen_ai.conversation.id") for s in spans} == {
            transcript,
            None,  # tools and approvals do not say it
        }

    def test_content_only_when_asked(self, scenario: tuple[Path, dict[str, str]]) -> None:
        """Without content no span carries what was said; with it, the conventions'
        messages, system instructions, tool definitions and the calls' arguments and
        results are there."""
        path, _ = scenario
        said = {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.definitions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }
        assert not any(said & set(span.attributes or {}) for span in exported(path))
        spans = exported(path, content=True)
        assert said <= {key for span in spans for key in span.attributes or {}}
        chat = next(s for s in spans if s.name == "chat demo-model")
        messages = orjson.loads(str((chat.attributes or {})["gen_ai.input.messages"]))
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[1]["parts"] == [{"type": "text", "content": "What is this?"}]
        output = orjson.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
        assert output == [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": "Looking."},
                    {"type": "tool_call", "id": "call_1_1", "name": "read_file",
                     "arguments": {"path": "missing.txt"}},
                    {"type": "tool_call", "id": "call_1_2", "name": "read_file",
                     "arguments": {"path": "README.md"}},
                ],
                "finish_reason": "tool_calls",
            }
        ]  # fmt: skip
        note = next(s for s in spans if s.name == "execute_tool note")
        assert (note.attributes or {})["gen_ai.tool.call.arguments"] == '{"text":"remember"}'
        assert (note.attributes or {})["gen_ai.tool.call.result"] == DENIED


class TestIds:
    def test_a_run_id_of_128_bits_is_the_trace_id(self) -> None:
        """mini-harness's run ids are 32 hex digits: the trace id is that number."""
        assert trace_id("0123456789abcdef0123456789abcdef") == 0x0123456789ABCDEF0123456789ABCDEF

    def test_another_run_id_is_hashed(self) -> None:
        """A forked child process's run id (`<id>-<12 hex>`) or an API user's own is hashed
        to 128 bits, never 0, the same every time."""
        child = "0123456789abcdef0123456789abcdef-a1b2c3d4e5f6"
        assert trace_id(child) == trace_id(child)
        assert 0 < trace_id(child) < 2**128
        assert trace_id(child) != trace_id("0123456789abcdef0123456789abcdef")
        assert 0 < trace_id("0" * 32) < 2**128  # the invalid all-zero id is hashed too

    def test_span_ids_are_what_they_stand_for(self) -> None:
        """A span id is 64 bits of the hash of its parts: the same parts, the same id."""
        assert span_id("call", "r", "c-1") == span_id("call", "r", "c-1")
        assert span_id("call", "r", "c-1") != span_id("call", "r", "c-2")
        assert span_id("call", "r", "c-1") != span_id("callr", "c-1")
        assert 0 < span_id("run", "r") < 2**64

    def test_times_are_exact(self) -> None:
        """A recorded timestamp converts to nanoseconds with no float rounding."""
        assert time_ns("2026-01-02T03:04:05.123456Z") == 1_767_323_045_123_456_000
        assert time_ns("1970-01-01T00:00:00.000001Z") == 1_000
