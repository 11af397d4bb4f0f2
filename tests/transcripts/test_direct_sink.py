"""ToolRuntime's direct route into the writer records exactly what emit(event) records."""

from __future__ import annotations

import contextlib
import itertools
import re
from pathlib import Path

import pytest

from mini_harness import ToolCallError, ToolRegistry, ToolRuntime
from mini_harness.errors import TranscriptWriteError
from mini_harness.events import Event, NullSink, ToolCalled, ToolSucceeded
from mini_harness.runtime import MemorySink
from mini_harness.transcripts import JsonlTranscript, Redactor, verify_transcript

INPUTS = [
    {"text": "hello"},
    {"text": 'héllo ✓ \u2028 "quoted" \\ back'},
    {"text": "x" * 5_000},  # over the small cap below: both routes write a marker
    {"text": "a", "extra": [1, 2.5, None, True, {"k": "v"}]},
    {"text": 1},  # invalid input: ToolFailed after a direct ToolCalled
    {"text": float("nan")},  # not JSON: recorded as its repr, then refused
]


class EmitOnly:
    """A sink with only emit(): the runtime makes event objects for it (the general route)."""

    def __init__(self, inner: JsonlTranscript) -> None:
        self.inner = inner

    def emit(self, event: Event) -> None:
        self.inner.append(event)


def _clock() -> object:
    ticks = itertools.count()
    return lambda: f"2026-11-30T08:00:{next(ticks) % 60:02d}.000000Z"


def _record(path: Path, registry: ToolRegistry, *, direct: bool, **options: object) -> list[bytes]:
    writer = JsonlTranscript(path, max_event_bytes=4_096, **options)  # type: ignore[arg-type]
    sink = writer if direct else EmitOnly(writer)
    runtime = ToolRuntime(registry, sink, run_id="0" * 32, timestamp=_clock())  # type: ignore[arg-type]
    runtime._monotonic_ns = lambda: 0  # durations of 0.0
    with writer:
        for tool_input in INPUTS:
            with contextlib.suppress(ToolCallError):
                runtime.dispatch("echo", tool_input)
    assert verify_transcript(path).ok
    # The header carries a random transcript id, so the hash chain differs from line 1 on;
    # everything else must be the same bytes.
    return [
        re.sub(rb',"prev":"[0-9a-f]{32}"', b"", line) for line in path.read_bytes().splitlines()[1:]
    ]


@pytest.mark.parametrize(
    "options",
    [{}, {"redactor": Redactor.from_config(secrets=["héllo"])}, {"lock_lease": 0.0}],
    ids=["plain", "redacting", "no-lease"],
)
def test_direct_and_general_routes_write_the_same_bytes(
    tmp_path: Path, registry: ToolRegistry, options: dict[str, object]
) -> None:
    direct = _record(tmp_path / "direct.jsonl", registry, direct=True, **options)
    general = _record(tmp_path / "general.jsonl", registry, direct=False, **options)
    assert direct == general
    assert len(direct) == 1 + 2 * len(INPUTS)  # RunStarted, then two events per call
    assert b'"$omitted"' in b"\n".join(direct)  # the capped call went through the cap


def test_a_field_orjson_refuses_fails_alike(tmp_path: Path, registry: ToolRegistry) -> None:
    """A run id with a lone surrogate cannot be written by either route: same error."""
    messages = []
    for direct in (True, False):
        writer = JsonlTranscript(tmp_path / f"{direct}.jsonl")
        sink = writer if direct else EmitOnly(writer)
        runtime = ToolRuntime(registry, sink, run_id="\udcff")
        with writer, pytest.raises(TranscriptWriteError) as caught:
            runtime.dispatch("echo", {"text": "a"})
        messages.append(str(caught.value).replace(str(tmp_path), ""))
    assert messages[0].replace("True", "False") == messages[1]


def test_sinks_without_direct_methods_get_event_objects(registry: ToolRegistry) -> None:
    sink = MemorySink()
    ToolRuntime(registry, sink).dispatch("echo", {"text": "a"})
    called, succeeded = sink.events[-2:]
    assert isinstance(called, ToolCalled)
    assert called.input == {"text": "a"}
    assert called.input_json == b'{"text":"a"}'
    assert isinstance(succeeded, ToolSucceeded)
    assert succeeded.output_json == b'{"text":"a"}'


def test_replacing_the_sink_moves_the_direct_route(tmp_path: Path, registry: ToolRegistry) -> None:
    runtime = ToolRuntime(registry, NullSink())
    runtime.dispatch("echo", {"text": "dropped"})
    with JsonlTranscript(tmp_path / "t.jsonl") as writer:
        runtime.sink = writer
        runtime.dispatch("echo", {"text": "kept"})
    text = (tmp_path / "t.jsonl").read_text()
    assert '"kept"' in text
    assert '"dropped"' not in text


class SeeingEmit(JsonlTranscript):
    """A subclass that overrides only emit, to see every event."""

    seen: list[str]

    def emit(self, event: Event) -> None:
        self.seen.append(type(event).__name__)
        super().emit(event)


class Forwarding:
    """A proxy with its own emit that forwards every other attribute."""

    def __init__(self, inner: JsonlTranscript) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def emit(self, event: Event) -> None:
        self.seen.append(type(event).__name__)
        self.inner.emit(event)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_sinks_that_override_emit_still_see_every_event(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    """The direct route is taken only when the class defining emit also defines it."""
    subclassed = SeeingEmit(tmp_path / "a.jsonl")
    subclassed.seen = []
    proxy = Forwarding(JsonlTranscript(tmp_path / "b.jsonl"))
    for sink in (subclassed, proxy):
        ToolRuntime(registry, sink).dispatch("echo", {"text": "a"})
        assert sink.seen == ["RunStarted", "ToolCalled", "ToolSucceeded"]
    subclassed.close()
    proxy.inner.close()


def test_the_direct_route_refuses_objects_as_the_general_route_does(tmp_path: Path) -> None:
    """A call id that is an object is refused, not written as orjson would serialise it."""
    import dataclasses

    @dataclasses.dataclass
    class CallId:
        value: str

    with JsonlTranscript(tmp_path / "t.jsonl") as writer:
        writer.append(ToolCalled("2026-11-30T08:00:00.000000Z", "r", "c-1", "echo", {}))
        with pytest.raises(TranscriptWriteError, match="not JSON"):
            writer.emit_tool_called(
                "2026-11-30T08:00:00.000000Z",
                "r",
                CallId("c-2"),  # type: ignore[arg-type]
                "echo",
                {},
                b"{}",
            )
    assert verify_transcript(tmp_path / "t.jsonl").integrity == ()
