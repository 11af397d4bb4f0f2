"""Dispatch: look up, validate, run, and record every call as events."""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from mini_harness._version import __version__
from mini_harness.errors import (
    HandlerTimeoutError,
    InvalidInputError,
    InvalidOutputError,
    NotJsonError,
    RejectedInputError,
    TooDeepError,
    ToolCallError,
    ToolCancelledError,
    ToolDeniedError,
    ToolHandlerError,
    ToolTimeoutError,
    UnknownToolError,
)
from mini_harness.events import (
    EventSink,
    JsonValue,
    NullSink,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    check_json,
    new_id,
    utc_timestamp,
)
from mini_harness.events.jsonvalue import bounded_repr, bounded_str
from mini_harness.runtime.definitions import ToolDefinition
from mini_harness.runtime.registry import RegisteredTool, ToolRegistry
from mini_harness.runtime.results import ToolResult, WithEffects, recordable, tool_error
from mini_harness.runtime.validation import decode_arguments

if TYPE_CHECKING:
    from mini_harness.runtime.approval import Approver

# What a plain handler returns: never awaitable, so dispatch skips the awaitable check.
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


def _elapsed_ms(start_ns: int, end_ns: int) -> float:
    """Milliseconds to the nearest microsecond (ties to even). Rounded to whole
    microseconds, then divided: round(x, 3) would format the float in decimal to round it."""
    return round((end_ns - start_ns) / 1000) / 1000


class ToolRuntime:
    """One run: dispatches against a registry and emits events to a sink.

    The first dispatch (or `start()`) emits `RunStarted` with the registry's definitions.
    Every dispatch emits `ToolCalled` and then exactly one terminal event; on failure the
    matching ToolCallError subclass is raised after the failure was recorded.

    One runtime per process: a runtime used in a child of `os.fork` notices the new process
    id and takes a new random call id prefix (and, if its run had not started, a run of its
    own), so parent and child never give the same id. A call begun before the fork is the
    parent's: a child that returns from its handler does not record its end.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        sink: EventSink | None = None,
        *,
        run_id: str | None = None,
        timestamp: Callable[[], str] = utc_timestamp,
        monotonic_ns: Callable[[], int] = time.perf_counter_ns,
        approver: Approver | None = None,
    ) -> None:
        self.registry = registry
        self.approver = approver
        self.sink: EventSink = sink if sink is not None else NullSink()
        self.run_id = run_id or new_id()
        self._timestamp = timestamp
        self._monotonic_ns = monotonic_ns
        self._started = False
        self.calls = 0  # dispatches begun (in this process, and before a fork)
        self._call_prefix = f"{self.run_id[:12]}-"
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.tools_snapshot: tuple[ToolDefinition, ...] = ()

    def __repr__(self) -> str:
        return f"<ToolRuntime(run_id={self.run_id!r}, calls={self.calls})>"

    def _check_process(self) -> None:
        """In a child of `os.fork`: never give a call id (or a RunStarted) the parent gives.

        The child takes 12 random hex digits in place of the run id's as its call id prefix
        (the numbers go on from the parent's count). A run not started yet would be started
        twice, so the child's is a run of its own: the parent's run id, a dash and those
        digits. The lock is a new one, in case a thread of the parent held it at the fork.
        """
        pid = os.getpid()
        if pid == self._pid:
            return
        own = new_id()[:12]
        self._pid = pid
        self._lock = threading.Lock()
        self._call_prefix = f"{own}-"
        if not self._started:
            self.run_id = f"{self.run_id}-{own}"

    def start(self, **agent_fields: Any) -> None:
        """Emit RunStarted (once); dispatch calls this for you. An agent run passes its
        RunStarted fields (task, model, system_prompt, project_rules, max_steps)."""
        self._check_process()
        with self._lock:
            if self._started:
                return
            self.tools_snapshot = tuple(self.registry.list())
            policy = getattr(self.approver, "policy_sha256", None)
            self.sink.emit(
                RunStarted(
                    ts=self._timestamp(),
                    run_id=self.run_id,
                    harness=__version__,
                    tools=self.tools_snapshot,
                    policy_sha256=policy if isinstance(policy, str) else None,
                    **agent_fields,
                )
            )
            self._started = True

    # --- the two halves every dispatch shares ---------------------------------

    def _begin(
        self,
        name: str,
        tool_input: object,
        agent_call: tuple[str, int] | None = None,
        *,
        approve: bool = True,
        refused: str | None = None,
    ) -> tuple[str, RegisteredTool, int]:
        """Record ToolCalled, then look up, validate and (unless `approve` is False: the
        caller awaits the approver) approve; raise (recorded) on failure.

        `agent_call` is the model's id for the call and the step, in an agent run;
        `refused` says why the input cannot be used (arguments that are not JSON)."""
        if self._pid != os.getpid():  # the check of _check_process, without a call
            self._check_process()
        if not self._started:
            self.start()
        if not name.isascii():
            name = recordable(name)  # only a name we could never register can change here
        with self._lock:
            self.calls += 1
            call_id = f"{self._call_prefix}{self.calls}"
        recorded: JsonValue = tool_input
        problem = refused
        try:
            check_json(tool_input)
        except TooDeepError as exc:
            recorded = {"$omitted": str(exc)}
            problem = f"Invalid input for {name}: {exc}"
        except NotJsonError as exc:
            recorded = recordable(bounded_repr(tool_input))
            problem = f"Invalid input for {name}: not a JSON value ({exc})"
        tool_use_id, step = (None, None) if agent_call is None else agent_call
        self.sink.emit(
            ToolCalled(
                self._timestamp(),
                self.run_id,
                call_id,
                name,
                recorded,
                tool_use_id=tool_use_id,
                step=step,
            )
        )
        start = self._monotonic_ns()
        tool = self.registry.get(name)
        if tool is None:
            message = self.registry.unknown_tool_message(name)
            self._fail(call_id, name, start, UnknownToolError(name, message))
        if problem is not None:
            self._fail(call_id, name, start, InvalidInputError(name, problem, path=name))
        try:
            violations = tool.validator.check(tool_input)
        except (ValueError, TypeError) as exc:  # a value JSON encodes but no schema can read
            message = f"Invalid input for {name}: not a JSON value ({bounded_str(exc)})"
            self._fail(call_id, name, start, InvalidInputError(name, message, path=name))
        if violations:
            first = violations[0]
            error = InvalidInputError(
                name, first.full_message, path=first.path, violations=violations
            )
            self._fail(call_id, name, start, error)
        if approve and self.approver is not None:
            self._approve(call_id, tool, tool_input, start)
            start = self._monotonic_ns()  # durationMs is the tool's: a person's wait is not
        return call_id, tool, start

    def _succeed(
        self, call_id: str, tool: RegisteredTool, tool_input: JsonValue, start: int, output: object
    ) -> ToolResult:
        # A handler that changed files returns WithEffects: the effects go into the record.
        name = tool.name
        effects = None
        if type(output) is WithEffects:
            effects = output.effects
            output = output.output
        try:
            check_json(output)
        except NotJsonError as exc:  # a TooDeepError says "nested deeper than ..." itself
            how = exc if isinstance(exc, TooDeepError) else f"that is not JSON: {exc}"
            message = f"Tool {name} returned a value {how}"
            self._fail(call_id, name, start, InvalidOutputError(name, message))
        if tool.output_validator is not None:
            # A result that breaks the tool's own outputSchema is not a success: an MCP
            # client would refuse it, and a model would be told what the tool never promised.
            broken = tool.output_validator.check(output)
            if broken:
                first = broken[0]
                message = f"Invalid output for {first.path}: {first.message} (its outputSchema)"
                self._fail(call_id, name, start, InvalidOutputError(name, message))
        duration = _elapsed_ms(start, self._monotonic_ns())
        if os.getpid() == self._pid:  # not in a child a handler forked (see the class)
            self.sink.emit(
                ToolSucceeded(
                    self._timestamp(), self.run_id, call_id, name, output, duration, effects=effects
                )
            )
        return ToolResult(name, tool_input, output, duration, call_id, effects)

    # --- approval (see Approver) ----------------------------------------------

    def _approve(
        self, call_id: str, tool: RegisteredTool, tool_input: JsonValue, start: int
    ) -> None:
        """Ask the approver; a denial is recorded as ToolFailed (kind `denied`) and raised."""
        try:
            reason = self._consult(call_id, tool, tool_input)
            if inspect.isawaitable(reason):
                from mini_harness.runtime.handler_threads import run_coroutine

                reason = run_coroutine(reason, None)
        except BaseException as exc:
            reason = self._unapproved(call_id, tool, start, exc)
        if reason is not None:
            self._fail(call_id, tool.name, start, ToolDeniedError(tool.name, str(reason)))

    async def _approve_async(
        self, call_id: str, tool: RegisteredTool, tool_input: JsonValue, start: int
    ) -> None:
        """`_approve` inside an event loop: an approver's awaitable is awaited."""
        try:
            reason = self._consult(call_id, tool, tool_input)
            if inspect.isawaitable(reason):
                reason = await reason
        except BaseException as exc:
            reason = self._unapproved(call_id, tool, start, exc)
        if reason is not None:
            self._fail(call_id, tool.name, start, ToolDeniedError(tool.name, str(reason)))

    def _consult(self, call_id: str, tool: RegisteredTool, tool_input: JsonValue) -> object:
        if self.approver is None:
            return None
        from mini_harness.runtime.approval import PendingCall  # a run with an approver

        pending = PendingCall(
            self.run_id, call_id, tool.definition, tool_input, self.sink, self._timestamp
        )
        return self.approver(pending)

    def _unapproved(
        self, call_id: str, tool: RegisteredTool, start: int, exc: BaseException
    ) -> str:
        """An approver that breaks never lets the call run (its error is the reason); an
        interrupt while asking (Ctrl-C, the session ending) is recorded, then goes on."""
        if isinstance(exc, Exception):
            return f"Approval of {tool.name} failed ({type(exc).__name__}: {exc}); it did not run"
        self._raised(call_id, tool, start, exc, HandlerTimeoutError)
        raise exc

    def _fail(self, call_id: str, name: str, start: int, error: ToolCallError) -> NoReturn:
        """Record ToolFailed for `error`, then raise it."""
        self._record_failure(call_id, name, start, error)
        raise error

    def _record_failure(self, call_id: str, name: str, start: int, error: ToolCallError) -> None:
        duration = _elapsed_ms(start, self._monotonic_ns())
        error.call_id, error.duration_ms = call_id, duration
        if os.getpid() != self._pid:  # in a child a handler forked: the parent's call
            return
        detail = tool_error(error)
        self.sink.emit(ToolFailed(self._timestamp(), self.run_id, call_id, name, detail, duration))

    def _raised(
        self, call_id: str, tool: RegisteredTool, start: int, exc: BaseException, timeout: type
    ) -> None:
        """Record how a handler's (or an approver's) exception ends its call, and raise the
        ToolCallError.

        `timeout` is the exception class a timeout arrives as. A typed tool refusing its own
        input is invalid input (from a nested call, a failure). An exception that must
        propagate (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio's CancelledError)
        is recorded as `cancelled` and returns: the caller re-raises it.
        """
        name = tool.name
        error: ToolCallError
        if isinstance(exc, timeout):
            error = ToolTimeoutError(name, f"Tool {name} timed out after {tool.timeout or 0:g} s")
        elif isinstance(exc, RejectedInputError) and exc.tool == name:
            error = exc
        elif isinstance(exc, Exception):
            text = recordable(bounded_str(exc))
            kind = recordable(type(exc).__name__)
            message = (
                f"Tool {name} failed: {kind}: {text}" if text else f"Tool {name} failed: {kind}"
            )
            error = ToolHandlerError(name, message, error_type=kind)
        else:
            self._record_failure(
                call_id, name, start, ToolCancelledError(name, f"Tool {name} cancelled")
            )
            return
        self._fail(call_id, name, start, error)

    # --- sync -----------------------------------------------------------------

    def dispatch(
        self, name: str, tool_input: JsonValue, *, agent_call: tuple[str, int] | None = None
    ) -> ToolResult:
        """Dispatch one call and wait for it; raise a ToolCallError subclass if it failed.

        `agent_call` (the model's tool-use id, the step) links the call to an agent run's
        model response."""
        return self._dispatch(name, tool_input, agent_call)

    def dispatch_arguments(
        self, name: str, arguments: str, *, agent_call: tuple[str, int] | None = None
    ) -> ToolResult:
        """`dispatch` of a call whose input is JSON text, as a model sends it. Text that is
        not JSON is recorded as it is and refused as invalid input; the error recorded is
        the one raised, the text the model is told."""
        tool_input, refused = decode_arguments(name, arguments)
        return self._dispatch(name, tool_input, agent_call, refused)

    def _dispatch(
        self,
        name: str,
        tool_input: JsonValue,
        agent_call: tuple[str, int] | None,
        refused: str | None = None,
    ) -> ToolResult:
        call_id, tool, start = self._begin(name, tool_input, agent_call, refused=refused)
        try:
            if tool.timeout is None and not tool.is_async:  # the common case, inline
                output = tool.handler(tool_input)
                if type(output) not in _PLAIN and inspect.isawaitable(output):
                    from mini_harness.runtime import handler_threads as threads

                    output = threads.run_coroutine(output, None)
            else:  # the handler threads load with the first handler that needs them
                from mini_harness.runtime import handler_threads as threads

                if tool.is_async:
                    output = threads.run_coroutine(tool.handler(tool_input), tool.timeout)
                else:
                    output = threads.call_in_thread(tool.handler, tool_input, tool.timeout)
        except BaseException as exc:
            self._raised(call_id, tool, start, exc, HandlerTimeoutError)
            raise
        return self._succeed(call_id, tool, tool_input, start, output)

    # --- async ----------------------------------------------------------------

    async def dispatch_async(self, name: str, tool_input: JsonValue) -> ToolResult:
        """Dispatch from inside an event loop; sync handlers run in the shared handler threads."""
        import asyncio  # only async callers pay for it

        from mini_harness.runtime.handler_threads import sync_off_loop

        call_id, tool, start = self._begin(name, tool_input, approve=False)
        if self.approver is not None:
            await self._approve_async(call_id, tool, tool_input, start)
            start = self._monotonic_ns()  # durationMs is the tool's: a person's wait is not
        try:
            if tool.is_async:
                output = await asyncio.wait_for(tool.handler(tool_input), tool.timeout)
            else:
                output = await asyncio.wait_for(
                    sync_off_loop(tool.handler, tool_input), tool.timeout
                )
        except BaseException as exc:
            self._raised(call_id, tool, start, exc, TimeoutError)
            raise
        return self._succeed(call_id, tool, tool_input, start, output)

    def attempt(self, name: str, tool_input: JsonValue) -> ToolResult | ToolCallError:
        """`dispatch` that returns the recorded failure instead of raising it."""
        try:
            return self.dispatch(name, tool_input)
        except ToolCallError as exc:
            return exc
