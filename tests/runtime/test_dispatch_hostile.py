"""Hostile input and handlers: every call is still recorded and ends in one terminal event."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mini_harness import (
    InvalidInputError,
    InvalidOutputError,
    ToolDefinition,
    ToolHandlerError,
    ToolRegistry,
    ToolRuntime,
    UnknownToolError,
)
from mini_harness.events import (
    MAX_JSON_DEPTH,
    Event,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
)
from mini_harness.replay import fold_transcript, rerun_transcript
from mini_harness.runtime.results import WithEffects
from mini_harness.transcripts import JsonlTranscript, read_transcript, verify_transcript

OBJECT = {"type": "object"}
TOO_DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels"


def nested_lists(levels: int) -> list[Any]:
    """`levels` levels of lists: [] is 1, [[]] is 2."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def nested_dicts(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def self_referential() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def _events(path: Path) -> list[Event]:
    return [record.event for record in read_transcript(path)]


def _call_events(path: Path) -> list[Event]:
    """The ToolCalled and terminal events of a log, after checking its chain is whole."""
    report = verify_transcript(path)
    assert report.ok, report
    return [e for e in _events(path) if isinstance(e, ToolCalled | ToolSucceeded | ToolFailed)]


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    return tmp_path / "t.jsonl"


def _dispatch_logged(log: Path, registry: ToolRegistry, name: str, tool_input: Any) -> ToolRuntime:
    with JsonlTranscript(log, fsync="never") as sink:
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch(name, tool_input)
    return runtime


def _keep(registry: ToolRegistry) -> ToolRegistry:
    registry.register(ToolDefinition("keep", "Returns its input.", OBJECT), lambda data: data)
    return registry


class TestDeepNesting:
    @pytest.mark.parametrize(
        "make",
        [
            lambda: {"v": nested_lists(MAX_JSON_DEPTH)},
            lambda: nested_lists(1_000),
            lambda: nested_lists(5_000),
            lambda: nested_lists(100_000),
            lambda: nested_dicts(1_000),
            self_referential,
        ],
        ids=["101", "1000", "5000", "100000", "dicts-1000", "self-referential"],
    )
    def test_a_too_deep_input_is_recorded_and_fails_as_invalid_input(
        self, log: Path, registry: ToolRegistry, make: Callable[[], Any]
    ) -> None:
        """The call is recorded with a placeholder for the input and fails with one message."""
        with pytest.raises(InvalidInputError) as caught:
            _dispatch_logged(log, _keep(registry), "keep", make())
        assert caught.value.message == f"Invalid input for keep: {TOO_DEEP}"
        called, failed = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert called.input == {"$omitted": TOO_DEEP}
        assert isinstance(failed, ToolFailed)
        assert (failed.error.kind, failed.error.message) == ("invalid_input", caught.value.message)

    @pytest.mark.parametrize(
        "make", [lambda: nested_lists(101), lambda: nested_lists(100_000), self_referential]
    )
    def test_a_too_deep_output_fails_as_invalid_output(
        self, log: Path, registry: ToolRegistry, make: Callable[[], Any]
    ) -> None:
        """A handler returning a value nested too deep ends its call as invalid_output."""
        registry.register(ToolDefinition("deep", "Returns a deep value.", OBJECT), lambda _: make())
        with pytest.raises(InvalidOutputError, match=TOO_DEEP):
            _dispatch_logged(log, registry, "deep", {})
        _called, failed = _call_events(log)
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_output"
        assert failed.error.message == f"Tool deep returned a value {TOO_DEEP}"

    def test_values_at_the_limit_work_end_to_end(self, log: Path, registry: ToolRegistry) -> None:
        """An input and output of exactly MAX_JSON_DEPTH levels dispatch, log, fold and
        re-run like any other."""
        deep = {"v": nested_lists(MAX_JSON_DEPTH - 1)}
        registry = _keep(registry)
        runtime = _dispatch_logged(log, registry, "keep", deep)
        assert runtime.calls == 1
        called, succeeded = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert called.input == deep
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.output == deep
        fold = fold_transcript(log)
        assert [call.status for call in fold.calls] == ["succeeded"]
        report = rerun_transcript(log, registry, allow_side_effects=True)
        assert [outcome.outcome for outcome in report.outcomes] == ["matched"]


class TestUnprintableValues:
    def test_a_huge_integer_input_is_recorded_and_refused(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """A 10,000-digit integer is invalid input, not a bare ValueError."""
        with pytest.raises(InvalidInputError, match="does not fit in 64 bits"):
            _dispatch_logged(log, _keep(registry), "keep", {"n": 10**10_000})
        called, failed = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert isinstance(called.input, str)
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_input"

    def test_a_huge_integer_output_is_invalid_output(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """A handler returning a 10,000-digit integer ends its call as invalid_output."""
        registry.register(
            ToolDefinition("big", "Returns a big number.", OBJECT), lambda _: 10**10_000
        )
        with pytest.raises(InvalidOutputError, match="does not fit in 64 bits"):
            _dispatch_logged(log, registry, "big", {})
        _, failed = _call_events(log)
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_output"

    def test_an_input_whose_repr_raises_is_recorded_and_refused(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """An object whose __repr__ raises is invalid input, recorded as a description."""

        class Unprintable:
            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        with pytest.raises(InvalidInputError, match="Unprintable is not a JSON value"):
            _dispatch_logged(log, _keep(registry), "keep", {"x": Unprintable()})
        called, failed = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert called.input == "<dict object (its repr failed)>"
        assert isinstance(failed, ToolFailed)

    def test_an_exception_whose_text_cannot_be_made_is_a_handler_error(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """A handler raising an exception whose str() raises still ends as handler_error."""

        def fail(_: object) -> object:
            raise ValueError(10**10_000)

        registry.register(ToolDefinition("fail", "Fails oddly.", OBJECT), fail)
        with pytest.raises(ToolHandlerError, match="ValueError"):
            _dispatch_logged(log, registry, "fail", {})
        _, failed = _call_events(log)
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "handler_error"


def _raising(exc_type: type[BaseException], is_async: bool) -> Callable[[Any], Any]:
    if is_async:

        async def handler_async(_: Any) -> Any:
            raise exc_type

        return handler_async

    def handler(_: Any) -> Any:
        raise exc_type

    return handler


class TestExitsAndInterrupts:
    @pytest.mark.parametrize("exc_type", [SystemExit, GeneratorExit, KeyboardInterrupt])
    @pytest.mark.parametrize("is_async", [False, True], ids=["sync-handler", "async-handler"])
    @pytest.mark.parametrize("through", ["dispatch", "dispatch_async"])
    def test_the_call_is_recorded_as_cancelled_then_the_exception_propagates(
        self,
        log: Path,
        exc_type: type[BaseException],
        is_async: bool,
        through: str,
    ) -> None:
        """Exit, generator exit and interrupt end the call as `cancelled` and are re-raised."""
        registry = ToolRegistry()
        registry.register(ToolDefinition("quit", "Leaves.", OBJECT), _raising(exc_type, is_async))
        with JsonlTranscript(log, fsync="never") as sink:
            runtime = ToolRuntime(registry, sink)
            call: Callable[[], object] = (
                (lambda: runtime.dispatch("quit", {}))
                if through == "dispatch"
                else (lambda: asyncio.run(runtime.dispatch_async("quit", {})))
            )
            with pytest.raises(exc_type):
                call()
        called, *terminal = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert len(terminal) == 1
        assert isinstance(terminal[0], ToolFailed)
        assert terminal[0].error.kind == "cancelled"


class TestForkInHandler:
    @pytest.mark.parametrize("with_effects", [False, True], ids=["plain", "with-effects"])
    def test_a_child_forked_by_the_handler_does_not_end_the_call(
        self, log: Path, with_effects: bool
    ) -> None:
        """A handler that forks and returns in both processes: only the parent records,
        whether or not the handler reports file effects."""
        registry = ToolRegistry()

        def forker(_: Any) -> Any:
            pid = os.fork()
            output = {"in": "child" if pid == 0 else "parent"}
            if pid != 0:
                os.waitpid(pid, 0)
            return WithEffects(output, ()) if with_effects else output

        registry.register(ToolDefinition("forker", "Forks.", OBJECT), forker)
        parent = os.getpid()
        with JsonlTranscript(log, fsync="never") as sink:
            runtime = ToolRuntime(registry, sink)
            try:
                result = runtime.dispatch("forker", {})
            finally:
                if os.getpid() != parent:
                    os._exit(0)
        assert result.output == {"in": "parent"}
        _called, *terminal = _call_events(log)
        assert len(terminal) == 1
        assert isinstance(terminal[0], ToolSucceeded)
        assert terminal[0].output == {"in": "parent"}


class TestHugeName:
    def test_a_ten_megabyte_name_is_recorded_capped_and_fails_as_unknown_tool(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """ToolCalled and ToolFailed are both written, the name cut like any oversized value."""
        name = "x" * 10_000_000
        with pytest.raises(UnknownToolError) as caught:
            _dispatch_logged(log, registry, name, {})
        assert len(caught.value.message) < 1_000
        called, failed = _call_events(log)
        assert isinstance(called, ToolCalled)
        assert called.name.startswith("xxx")
        assert "name of 10000000 bytes cut" in called.name
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "unknown_tool"
        assert failed.name == called.name
