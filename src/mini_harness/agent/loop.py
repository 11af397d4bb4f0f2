"""The agent loop: observe, decide, act, until a final answer or a limit.

Each step sends the conversation to the model (recorded as ModelRequested before it is
sent), records the answer (ModelResponded, or ModelFailed for each failed attempt), and
dispatches the answer's tool calls in order through the run's ToolRuntime, so they are
validated, recorded and confined like any other call. Every tool call the model made gets
exactly one tool result in the conversation: failed, unknown and unparsable calls get the
error text, so the model can correct itself. The run ends with RunFinished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import attrs
import orjson

from mini_harness.agent.config import AgentConfig, Opening
from mini_harness.agent.context import (
    manual_tool_message,
    system_message,
    trim_to_budget,
)
from mini_harness.agent.pairing import call_ids, unique_call_ids
from mini_harness.agent.providers import ModelProvider, ModelRequest, ModelResponse
from mini_harness.agent.reporting import LoopReporter, SilentReporter, ToolOutcome, call_outcome
from mini_harness.errors import (
    EventTooLargeError,
    ModelError,
    RunStopError,
    ToolCallError,
    interruption,
)
from mini_harness.events import (
    ContextTrimmed,
    JsonValue,
    Message,
    ModelFailed,
    ModelFailure,
    ModelIdentity,
    ModelRequested,
    ModelResponded,
    RunFinished,
    ToolCall,
    Usage,
    new_id,
    to_wire,
    utc_timestamp,
)
from mini_harness.events.measure import RequestHasher
from mini_harness.runtime.dispatch import ToolRuntime
from mini_harness.runtime.results import display_failure, tool_error

_FAILED = "model request failed"
"""How the stop reason of a failed model request begins."""


@attrs.frozen
class AgentOutcome:
    """How a run ended. `last_request` is the last request sent (None if none was), with
    the provider's input token count for it when reported."""

    run_id: str
    stop_reason: str
    final_text: str | None
    steps: int
    usage: Usage
    last_request: ModelRequest | None
    last_input_tokens: int | None
    error: str | None = None


class AgentLoop:
    """One agent run on a ToolRuntime (whose sink records the model events too)."""

    def __init__(
        self,
        runtime: ToolRuntime,
        provider: ModelProvider,
        config: AgentConfig,
        reporter: LoopReporter | None = None,
        *,
        served: Callable[[int, ToolCall], ToolOutcome | None] | None = None,
    ) -> None:
        """`served`, when given, may answer a tool call instead of dispatching it (offline
        replay serves calls it may not run again from the record)."""
        self.runtime = runtime
        self.provider = provider
        self.config = config
        self.reporter: LoopReporter = reporter or SilentReporter()
        self.history: list[Message] = []
        self._sent = 0
        self._seen = 0  # messages a model saw before this run (a continued run's)
        self._shown = 0  # what the reporter is told of a step is its number plus this
        self._served = served
        self._hasher = RequestHasher()
        self._usage = Usage()
        self._last_request: ModelRequest | None = None
        self._last_input_tokens: int | None = None

    def __repr__(self) -> str:
        return f"<AgentLoop(run_id={self.runtime.run_id!r}, messages={len(self.history)})>"

    def run(self, opening: Opening | None = None) -> AgentOutcome:
        """Run to a final answer or a limit; Ctrl-C ends the run as `cancelled`.

        With an `opening`, the run continues that conversation instead of starting one.
        Any other BaseException (SystemExit, GeneratorExit) also ends it as `cancelled` in
        the log, then goes on up to the caller.
        """
        config, runtime = self.config, self.runtime
        self.start(opening)
        self.history = [
            system_message(config.system_prompt, config.rules),
            Message("user", config.task),
        ]
        steps = 0
        final_text: str | None = None
        reason, error = "final", None
        try:
            if opening is not None:
                final_text = self._open(opening)
            elif config.manual_tool is not None:
                self._manual_tool(*config.manual_tool)
            while final_text is None:
                if steps >= config.max_steps:
                    reason = "max_steps"
                    error = f"stopped after {steps} step(s) without a final answer"
                    break
                steps += 1
                message = self._step(steps)
                if not message.tool_calls:
                    final_text = message.content
                self._act_all((call, steps) for call in message.tool_calls)
        except RunStopError as stop:
            reason, error = stop.reason, stop.error
            if reason == "budget":
                steps -= 1  # that request was never sent
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP taken as it is
            reason, error = "cancelled", interruption(exc)
        except BaseException:  # SystemExit, GeneratorExit...: the log still says how it ended
            self._finish("cancelled", final_text, steps)
            raise
        self._finish(reason, final_text, steps)
        return AgentOutcome(
            run_id=runtime.run_id,
            stop_reason=reason,
            final_text=final_text,
            steps=steps,
            usage=self._usage,
            last_request=self._last_request,
            last_input_tokens=self._last_input_tokens,
            error=error,
        )

    def start(self, opening: Opening | None = None) -> None:
        """Record the run's RunStarted, if not yet (`run` does it first). A resume calls it
        before `run`: that RunStarted claims the run it continues."""
        config = self.config
        self.runtime.start(
            task=config.task,
            model=ModelIdentity(self.provider.name, self.provider.model),
            system_prompt=config.system_prompt,
            project_rules=config.rules,
            max_steps=config.max_steps,
            resumed_from=opening.resumed_from if opening else None,
            forked_from=opening.forked_from if opening else None,
            unverified=opening.unverified if opening else None,
            workspace=config.workspace,
            settings=config.settings,
        )

    def _open(self, opening: Opening) -> str | None:
        """Start from a continued conversation; the final text if it ends there."""
        self.history = list(opening.history)
        self._seen = opening.sent
        self._shown = opening.steps_before
        # The calls the step it continues left: told as that step, the last before its own.
        self._act_all(opening.pending, told=opening.steps_before)
        if opening.follow_up is not None:
            self.history.append(Message("user", opening.follow_up))
            return None
        return opening.final_text if not opening.pending else None

    def _finish(self, reason: str, final_text: str | None, steps: int) -> None:
        self.runtime.sink.emit(
            RunFinished(
                ts=utc_timestamp(),
                run_id=self.runtime.run_id,
                stop_reason=reason,
                final_text=final_text,
                steps=steps,
                usage=self._usage,
            )
        )

    def _manual_tool(self, name: str, tool_input: JsonValue) -> None:
        """Dispatch the tool run before the task; the reporter hears of it as step 0."""
        call = ToolCall("", name, orjson.dumps(tool_input).decode())
        self.reporter.tool_called(0, call)
        try:
            done = self.runtime.dispatch(name, tool_input)
        except ToolCallError as exc:
            failure = to_wire(tool_error(exc))
            duration = exc.duration_ms or 0.0
            message = manual_tool_message(display_failure(name, tool_input, failure, duration))
            outcome = ToolOutcome(call, message, error=exc.message)
        else:
            message = manual_tool_message(done.display_json())
            outcome = ToolOutcome(call, message, output=done.output)
        self.history.append(message)
        self.reporter.tool_done(0, outcome)

    def _step(self, step: int) -> Message:
        """Trim if the budget asks, record the request, send it, record the answer."""
        config = self.config
        tools = self.runtime.tools_snapshot
        if config.max_context_tokens is not None:
            trim = trim_to_budget(
                self.history,
                system_prompt=config.system_prompt,
                rules=config.rules,
                tools=tools,
                budget=config.max_context_tokens,
                trimmable_before=max(self._sent, self._seen),
            )
            if not trim.fits:
                raise RunStopError(
                    "budget",
                    f"the next request does not fit in {config.max_context_tokens:,} "
                    "tokens (--max-context-tokens), even with old tool results trimmed: "
                    f"it needs at least ~{trim.tokens_after:,}",
                )
            if trim.replaced:
                self.history = list(trim.messages)
                self._hasher = RequestHasher()  # earlier messages changed: hash them again
                self.runtime.sink.emit(
                    ContextTrimmed(
                        ts=utc_timestamp(),
                        run_id=self.runtime.run_id,
                        step=step,
                        replaced=trim.replaced,
                        tokens_before=trim.tokens_before,
                        tokens_after=trim.tokens_after,
                        budget=config.max_context_tokens,
                    )
                )
        request = ModelRequest(tuple(self.history), tools, dict(config.params))
        request_id = new_id()
        self._hasher.add(self.history[self._hasher.count :])
        try:
            self.runtime.sink.emit(
                ModelRequested(
                    ts=utc_timestamp(),
                    run_id=self.runtime.run_id,
                    step=step,
                    request_id=request_id,
                    messages=tuple(self.history[self._sent :]),
                    params=request.params,
                    request_hash=self._hasher.hexdigest(request.params, tools),
                )
            )
        except EventTooLargeError as exc:  # a request is never sent unrecorded
            raise RunStopError(
                "budget", f"the next request cannot be recorded: {exc.message}"
            ) from None
        self._sent = len(self.history)
        self._last_request, self._last_input_tokens = request, None
        response = self._complete(request, request_id, step)
        self._usage += response.usage
        self._last_input_tokens = response.usage.input_tokens
        # Arguments stay as the model sent them; each provider sends ones that do not parse
        # in a form its servers accept (agent/providers/sdk.py).
        self.history.append(response.message)
        return response.message

    def _complete(self, request: ModelRequest, request_id: str, step: int) -> ModelResponse:
        """Send the request; each failed attempt is recorded, then the answer."""
        started = attempt_started = time.perf_counter()
        attempts = 1
        streamed = False

        def failed(error: ModelError) -> None:
            self.runtime.sink.emit(
                ModelFailed(
                    ts=utc_timestamp(),
                    run_id=self.runtime.run_id,
                    request_id=request_id,
                    error=ModelFailure(error.kind, error.status, error.message),
                    attempt=error.attempt,
                    duration_ms=_ms_since(attempt_started),
                )
            )

        def on_retry(error: ModelError) -> None:
            nonlocal attempt_started, attempts
            failed(error)
            attempt_started = time.perf_counter()
            attempts = error.attempt + 1
            self.reporter.retry(error)

        def on_text(chunk: str) -> None:
            nonlocal streamed
            streamed = True
            self.reporter.text(chunk)

        self.reporter.waiting(step + self._shown)
        try:
            try:
                response = self.provider.complete(
                    request, on_text=on_text if self.config.stream else None, on_retry=on_retry
                )
            finally:
                self.reporter.waited()
        except ModelError as exc:
            failed(exc)
            said = exc.message  # a provider's own may say "Model request failed" already
            reason = said if said.lower().startswith(_FAILED) else f"{_FAILED}: {said}"
            raise RunStopError("model_error", reason) from None
        except Exception as exc:  # a provider's bug must still end the request in the log
            message = f"{type(exc).__name__}: {exc}"
            failed(ModelError("invalid_response", message, attempt=attempts))
            raise RunStopError("model_error", f"{_FAILED}: {message}") from None
        except BaseException as exc:  # Ctrl-C, SystemExit...: recorded, then on up
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if isinstance(exc, KeyboardInterrupt):
                message = interruption(exc)
            failed(ModelError("cancelled", message, attempt=attempts))
            raise
        # Each call gets an id of its own before anything records or dispatches it.
        unique = unique_call_ids(response.message, call_ids(self.history))
        response = attrs.evolve(response, message=unique)
        try:
            self.runtime.sink.emit(
                ModelResponded(
                    ts=utc_timestamp(),
                    run_id=self.runtime.run_id,
                    request_id=request_id,
                    message=response.message,
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                    duration_ms=_ms_since(started),
                    response_id=response.response_id,
                )
            )
        except EventTooLargeError as exc:  # an answer the log cannot hold is not acted on
            failed(ModelError("response_too_large", exc.message, attempt=attempts))
            raise RunStopError("model_error", f"model answer not recorded: {exc.message}") from None
        self.reporter.response(step + self._shown, response, streamed)
        return response

    def _act_all(self, calls: Iterable[tuple[ToolCall, int]], told: int | None = None) -> None:
        """Dispatch the model's calls (each with the step that made it) in order; each
        result, or error, goes into the history as a tool message. The reporter is told
        the step as `told` when given, else as the steps before the run's first plus the
        step (Opening.steps_before)."""
        for call, step in calls:
            shown = step + self._shown if told is None else told
            self.reporter.tool_called(shown, call)
            outcome = self._served(step, call) if self._served is not None else None
            if outcome is None:
                outcome = self._act(call, step)
            self.history.append(outcome.message)
            self.reporter.tool_done(shown, outcome)

    def _act(self, call: ToolCall, step: int) -> ToolOutcome:
        # Arguments that are not JSON are recorded as sent and refused; the model is told
        # what ToolFailed records.
        try:
            result = self.runtime.dispatch_arguments(
                call.name, call.arguments, agent_call=(call.id, step)
            )
        except ToolCallError as exc:
            return call_outcome(call, error=exc.message)
        return call_outcome(call, output=result.output)


def _ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1_000_000) / 1000
