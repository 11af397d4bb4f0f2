"""Dispatch: look up, validate, run, and record every call as events."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import itertools
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

import attrs

from mini_harness._version import __version__
from mini_harness.errors import (
    InvalidInputError,
    InvalidOutputError,
    RejectedInputError,
    ToolCallError,
    ToolCancelledError,
    ToolHandlerError,
    ToolTimeoutError,
    UnknownToolError,
)
from mini_harness.events import (
    EventSink,
    JsonObject,
    JsonValue,
    NotJsonError,
    NullSink,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    check_json,
    new_id,
    utc_timestamp,
)
from mini_harness.runtime.registry import RegisteredTool, ToolRegistry

# What a plain handler returns: never awaitable, so dispatch skips the awaitable check.
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


def _has_direct_route(cls: type) -> bool:
    """Whether a sink class takes the two dispatch events as fields (see DirectSink).

    Decided on the class: the class that defines `emit` must also define both direct
    methods. A subclass that overrides only `emit` (to see every event), a proxy that
    forwards attributes, or a mock then get event objects through `emit`, as before.
    """

    def owner(name: str) -> type | None:
        return next((c for c in cls.__mro__ if name in c.__dict__), None)

    emit = owner("emit")
    return emit is not None and emit is owner("emit_tool_called") is owner("emit_tool_succeeded")


def _is_cancellation(exc: BaseException) -> bool:
    """asyncio's CancelledError, without importing asyncio (a CLI start-up cost) to ask."""
    module = sys.modules.get("asyncio")
    return module is not None and isinstance(exc, module.CancelledError)


# Without slots: a frozen attrs class with a __dict__ fills it directly, while a slotted
# one calls object.__setattr__ per field, which doubles the cost of making one (once per
# dispatch). Still frozen: setting an attribute raises FrozenInstanceError.
@attrs.frozen(slots=False)
class ToolResult:
    """What a successful dispatch returns (the reference's shape, plus the call id)."""

    name: str
    input: JsonValue
    output: JsonValue
    duration_ms: float
    call_id: str

    def to_json(self) -> JsonObject:
        """`{"name", "input", "output", "durationMs"}` with durationMs as recorded."""
        return {
            "name": self.name,
            "input": self.input,
            "output": self.output,
            "durationMs": self.duration_ms,
        }

    def display_json(self) -> JsonObject:
        """As the CLI shows it: durationMs rounded half-up to whole milliseconds."""
        return display_result(self.name, self.input, self.output, self.duration_ms)


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def display_result(
    name: str, tool_input: JsonValue, output: JsonValue, duration_ms: float
) -> JsonObject:
    """A successful call as the CLI shows it (and as replay rebuilds it from the events)."""
    return {
        "name": name,
        "input": tool_input,
        "output": output,
        "durationMs": round_half_up(duration_ms),
    }


def display_failure(
    name: str, tool_input: JsonValue, error: JsonObject, duration_ms: float
) -> JsonObject:
    """A failed call in the same shape, with the recorded `error` where the output would be."""
    return {
        "name": name,
        "input": tool_input,
        "error": error,
        "durationMs": round_half_up(duration_ms),
    }


def recordable(text: str) -> str:
    """`text` with lone surrogates written as `\\udcff` escapes, so it can go into a line.

    Strings the runtime makes itself (error messages, type and tool names) may carry them,
    e.g. an OSError about a path that is not UTF-8; a recorded call must not fail on that.
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _elapsed_ms(start_ns: int, end_ns: int) -> float:
    """Milliseconds to the nearest microsecond (ties to even). Rounded to whole
    microseconds, then divided: round(x, 3) would format the float in decimal to round it."""
    return round((end_ns - start_ns) / 1000) / 1000


_runtimes: weakref.WeakSet[ToolRuntime] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for runtime in list(_runtimes):
        runtime._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ToolRuntime:
    """One run: dispatches against a registry and emits events to a sink.

    The first dispatch (or `start()`) emits `RunStarted` with the registry's definitions.
    Every dispatch emits `ToolCalled` and then exactly one terminal event; on failure the
    matching ToolCallError subclass is raised after the failure was recorded.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        sink: EventSink | None = None,
        *,
        run_id: str | None = None,
        timestamp: Callable[[], str] = utc_timestamp,
        monotonic_ns: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self.registry = registry
        self.sink = sink if sink is not None else NullSink()
        self.run_id = run_id or new_id()
        self._timestamp = timestamp
        self._monotonic_ns = monotonic_ns
        self._started = False
        self._call_numbers = itertools.count(1)  # next() on it is atomic: no lock per call
        self._call_prefix = f"{self.run_id[:12]}-"
        self._calls_before_fork = 0
        self._lock = threading.Lock()
        self.tools_snapshot: tuple[JsonObject, ...] = ()
        _runtimes.add(self)

    def __repr__(self) -> str:
        return f"<ToolRuntime(run_id={self.run_id!r}, calls={self.calls})>"

    @property
    def calls(self) -> int:
        """How many dispatches this runtime has begun."""
        begun = int(repr(self._call_numbers)[6:-1]) - 1  # "count(N)": N is the next number
        return self._calls_before_fork + begun

    def _after_fork_in_child(self) -> None:
        """In a child of `os.fork`: never give a call id (or a RunStarted) the parent or a
        sibling gives too.

        The parent (and any other child) goes on counting calls from the same number: the
        child takes 12 random hex digits in place of the run id's as its call id prefix, and
        counts from 1. A run already started goes on in the child; one not started yet would
        be started twice, so the child's is a run of its own: the parent's run id (given or
        made), a dash and those 12 digits, which still names the run it came from. Either
        way the start lock is a new one, in case a thread of the parent (which the child
        does not have) held it at the fork.
        """
        own = new_id()[:12]
        self._calls_before_fork = self.calls
        self._call_numbers = itertools.count(1)
        self._call_prefix = f"{own}-"
        self._lock = threading.Lock()
        if not self._started:
            self.run_id = f"{self.run_id}-{own}"

    @property
    def sink(self) -> EventSink:
        return self._sink

    @sink.setter
    def sink(self, sink: EventSink) -> None:
        self._sink = sink
        if _has_direct_route(type(sink)):
            self._emit_called: Callable[..., None] = sink.emit_tool_called  # type: ignore[attr-defined]
            self._emit_succeeded: Callable[..., None] = sink.emit_tool_succeeded  # type: ignore[attr-defined]
            return
        emit = sink.emit

        def emit_called(  # noqa: PLR0917 - positional: called on every dispatch
            ts: str,
            run_id: str,
            call_id: str,
            name: str,
            tool_input: JsonValue,
            input_json: bytes | None,
        ) -> None:
            emit(ToolCalled(ts, run_id, call_id, name, tool_input, input_json=input_json))

        def emit_succeeded(  # noqa: PLR0917 - positional: called on every dispatch
            ts: str,
            run_id: str,
            call_id: str,
            name: str,
            output: JsonValue,
            duration_ms: float,
            output_json: bytes | None,
        ) -> None:
            emit(
                ToolSucceeded(
                    ts, run_id, call_id, name, output, duration_ms, output_json=output_json
                )
            )

        self._emit_called = emit_called
        self._emit_succeeded = emit_succeeded

    def start(self, **agent_fields: Any) -> None:
        """Emit RunStarted (once); dispatch calls this for you. An agent run passes its
        RunStarted fields (task, model, system_prompt, project_rules, max_steps)."""
        with self._lock:
            if self._started:
                return
            self.tools_snapshot = tuple(self.registry.definitions_json())
            self.sink.emit(
                RunStarted(
                    ts=self._timestamp(),
                    run_id=self.run_id,
                    harness=__version__,
                    tools=self.tools_snapshot,
                    **agent_fields,
                )
            )
            self._started = True

    # --- the two halves every dispatch shares ---------------------------------

    def _begin(
        self, name: str, tool_input: object, agent_call: tuple[str, int] | None = None
    ) -> tuple[str, RegisteredTool, int]:
        """Record ToolCalled, then look up and validate; raise (recorded) on failure.

        `agent_call` is the model's id for the call and the step, in an agent run."""
        if not self._started:
            self.start()
        if not name.isascii():
            name = recordable(name)  # only a name we could never register can change here
        call_id = f"{self._call_prefix}{next(self._call_numbers)}"
        try:
            encoded: bytes | None = check_json(tool_input)
            recorded_input: JsonValue = tool_input
            input_problem = None
        except NotJsonError as exc:
            encoded = None
            recorded_input = repr(tool_input)
            input_problem = str(exc)
        if agent_call is None:
            self._emit_called(
                self._timestamp(), self.run_id, call_id, name, recorded_input, encoded
            )
        else:
            self.sink.emit(
                ToolCalled(
                    self._timestamp(),
                    self.run_id,
                    call_id,
                    name,
                    recorded_input,
                    input_json=encoded,
                    tool_use_id=agent_call[0],
                    step=agent_call[1],
                )
            )
        start = self._monotonic_ns()
        tool = self.registry.get(name)
        if tool is None:
            self._fail(call_id, name, start, UnknownToolError(name, f"Unknown tool: {name}"))
        if input_problem is not None:
            message = f"Invalid input for {name}: not a JSON value ({input_problem})"
            self._fail(call_id, name, start, InvalidInputError(name, message, path=name))
        try:
            violations = tool.validator.check(tool_input)
        except (ValueError, TypeError) as exc:  # a value JSON encodes but no schema can read
            message = f"Invalid input for {name}: not a JSON value ({exc})"
            self._fail(call_id, name, start, InvalidInputError(name, message, path=name))
        if violations:
            first = violations[0]
            error = InvalidInputError(
                name, first.full_message, path=first.path, violations=violations
            )
            self._fail(call_id, name, start, error)
        return call_id, tool, start

    def _succeed(
        self, call_id: str, name: str, tool_input: JsonValue, start: int, output: object
    ) -> ToolResult:
        try:
            encoded = check_json(output)
        except NotJsonError as exc:
            message = f"Tool {name} returned a value that is not JSON: {exc}"
            self._fail(call_id, name, start, InvalidOutputError(name, message))
        duration = round((self._monotonic_ns() - start) / 1000) / 1000  # _elapsed_ms
        self._emit_succeeded(
            self._timestamp(), self.run_id, call_id, name, output, duration, encoded
        )
        return ToolResult(name, tool_input, output, duration, call_id)

    def _fail(self, call_id: str, name: str, start: int, error: ToolCallError) -> NoReturn:
        """Record ToolFailed for `error`, then raise it."""
        self._record_failure(call_id, name, start, error)
        raise error

    def _record_failure(self, call_id: str, name: str, start: int, error: ToolCallError) -> None:
        duration = _elapsed_ms(start, self._monotonic_ns())
        error.call_id = call_id
        detail = ToolError(kind=error.kind, message=recordable(error.message))
        if isinstance(error, InvalidInputError):
            detail = attrs.evolve(
                detail,
                path=recordable(error.path),
                violations=tuple(v.to_json() for v in error.violations) or None,
            )
        elif isinstance(error, ToolHandlerError):
            detail = attrs.evolve(detail, type=recordable(error.error_type))
        self.sink.emit(
            ToolFailed(
                ts=self._timestamp(),
                run_id=self.run_id,
                call_id=call_id,
                name=name,
                error=detail,
                duration_ms=duration,
            )
        )

    def _handler_failed(self, name: str, exc: BaseException) -> ToolHandlerError:
        text = recordable(str(exc))
        kind = recordable(type(exc).__name__)
        message = f"Tool {name} failed: {kind}: {text}" if text else f"Tool {name} failed: {kind}"
        return ToolHandlerError(name, message, error_type=kind)

    def _rejected(self, name: str, exc: RejectedInputError) -> ToolCallError:
        """A typed tool refusing its own input is invalid input; from a nested call, a failure."""
        return exc if exc.tool == name else self._handler_failed(name, exc)

    def _timed_out(self, name: str, timeout: float) -> ToolTimeoutError:
        return ToolTimeoutError(name, f"Tool {name} timed out after {timeout:g} s")

    # --- sync -----------------------------------------------------------------

    def dispatch(
        self, name: str, tool_input: JsonValue, *, agent_call: tuple[str, int] | None = None
    ) -> ToolResult:
        """Dispatch one call and wait for it; raise a ToolCallError subclass if it failed.

        `agent_call` (the model's tool-use id, the step) links the call to an agent run's
        model response."""
        call_id, tool, start = self._begin(name, tool_input, agent_call)
        try:
            if tool.timeout is None and not tool.is_async:  # the common case, inline
                output = tool.handler(tool_input)
                if type(output) not in _PLAIN and inspect.isawaitable(output):
                    output = _run_coroutine(output, None)
            else:
                output = self._run_sync(tool, tool_input)
        except _Timeout:
            self._fail(call_id, name, start, self._timed_out(name, tool.timeout or 0))
        except RejectedInputError as exc:
            self._fail(call_id, name, start, self._rejected(name, exc))
        except Exception as exc:  # the handler's own failure, whatever it is
            self._fail(call_id, name, start, self._handler_failed(name, exc))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) or _is_cancellation(exc):
                cancelled = ToolCancelledError(name, f"Tool {name} cancelled")
                self._record_failure(call_id, name, start, cancelled)
            raise
        return self._succeed(call_id, name, tool_input, start, output)

    def _run_sync(self, tool: RegisteredTool, tool_input: JsonValue) -> object:
        """An async handler, or one with a timeout (dispatch runs plain handlers itself)."""
        if tool.is_async:
            return _run_coroutine(tool.handler(tool_input), tool.timeout)
        return _call_in_thread(tool.handler, tool_input, tool.timeout)

    # --- async ----------------------------------------------------------------

    async def dispatch_async(self, name: str, tool_input: JsonValue) -> ToolResult:
        """Dispatch from inside an event loop; sync handlers run in a thread of their own."""
        import asyncio

        call_id, tool, start = self._begin(name, tool_input)
        try:
            output = await self._run_async(tool, tool_input)
        except TimeoutError:
            self._fail(call_id, name, start, self._timed_out(name, tool.timeout or 0))
        except asyncio.CancelledError:
            cancelled = ToolCancelledError(name, f"Tool {name} cancelled")
            self._record_failure(call_id, name, start, cancelled)
            raise
        except RejectedInputError as exc:
            self._fail(call_id, name, start, self._rejected(name, exc))
        except Exception as exc:
            self._fail(call_id, name, start, self._handler_failed(name, exc))
        return self._succeed(call_id, name, tool_input, start, output)

    async def _run_async(self, tool: RegisteredTool, tool_input: JsonValue) -> object:
        import asyncio

        if tool.is_async:
            return await asyncio.wait_for(tool.handler(tool_input), tool.timeout)
        return await asyncio.wait_for(_sync_off_loop(tool.handler, tool_input), tool.timeout)


async def _sync_off_loop(handler: Callable[[Any], Any], arg: object) -> object:
    """Run a sync handler in a daemon thread, so the loop keeps serving while it runs.

    Not `asyncio.to_thread`: the default executor's threads are joined at exit, so one
    abandoned handler (timed out or cancelled) would hold the process open until it ends.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: object, error: BaseException | None) -> None:
        if future.done():  # the caller stopped waiting (timeout or cancellation)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        value: object = None
        error: BaseException | None = None
        try:
            value = context.run(handler, arg)
        except BaseException as exc:  # handed to the awaiting caller
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name="mini-harness-tool", daemon=True).start()
    output = await future
    if inspect.isawaitable(output):
        return await output
    return output


class _Timeout(Exception):
    """Internal: a sync-dispatched handler ran past its timeout."""


def _run_coroutine(awaitable: Any, timeout: float | None) -> object:
    import asyncio

    async def runner() -> object:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except TimeoutError:
            raise _Timeout from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(runner())
    # Called from inside a running loop: run the coroutine on a loop of its own.
    return _call_in_thread(lambda _: asyncio.run(runner()), None, None)


def _call_in_thread(func: Callable[[Any], Any], arg: object, timeout: float | None) -> object:
    """Run func(arg) in a daemon thread; raise _Timeout if it does not finish in time.

    A thread cannot be killed: a timed-out handler keeps running in the background, but
    its result is discarded and the call is recorded as timed out.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func(arg)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name="mini-harness-tool", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise _Timeout
    if "error" in box:
        raise box["error"]
    return box.get("value")
