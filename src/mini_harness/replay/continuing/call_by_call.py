"""Re-run: dispatch recorded calls again against the current registry and compare outputs.

A call recorded as denied is never run again. Every other call passes today's approver
(the workspace's policy with `--approve`, which the command line gives; it never prompts)
before it runs: what it does not allow is skipped, and the report says why.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Iterator

import attrs
import orjson

from mini_harness.errors import ToolCallError, ToolDeniedError
from mini_harness.events import (
    EventSink,
    JsonObject,
    JsonValue,
    NullSink,
    ToolError,
    to_wire,
    utc_timestamp,
)
from mini_harness.replay.continuing.outcomes import (
    DIVERGED,
    MATCHED,
    NOW_FAILS,
    NOW_SUCCEEDS,
    SKIPPED,
    Drift,
    RerunOutcome,
    RerunReport,
)
from mini_harness.replay.history import (
    IN_DOUBT,
    SUCCEEDED,
    Call,
    FoldItem,
    History,
    Run,
    TranscriptFold,
)
from mini_harness.runtime.approval import Approver, PendingCall
from mini_harness.runtime.dispatch import ToolRuntime
from mini_harness.runtime.registry import ToolRegistry
from mini_harness.runtime.results import tool_error
from mini_harness.transcripts.codec import (
    OMITTED_KEY,
    REDACTED,
    Redactor,
    is_omitted,
    omitted_marker,
)

_DIFF_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def json_equal(a: JsonValue, b: JsonValue) -> bool:
    """Equal as JSON values: like ==, except that true/false never equal 1/0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is not list and type(b) is not dict and a == b


def json_diff(call: Call, recorded: JsonValue, current: JsonValue) -> str:
    """A unified diff of two values as sorted, indented JSON, headed by the call it is about."""
    return diff(json_lines(recorded), json_lines(current), f"{call.call_id} ({call.name})")


def json_lines(value: JsonValue) -> list[str]:
    """A value as sorted, indented JSON, line by line: what a diff compares."""
    return orjson.dumps(value, option=_DIFF_OPTIONS).decode().splitlines()


def diff(recorded: list[str], rerun: list[str], what: str) -> str:
    """A unified diff of the recorded and the re-run lines of `what`."""
    lines = difflib.unified_diff(
        recorded, rerun, fromfile=f"recorded {what}", tofile=f"re-run {what}", lineterm=""
    )
    return "\n".join(lines)


def definition_drift(run: Run, registry: ToolRegistry) -> list[Drift]:
    """Tools of a recorded run whose current definition differs, or that are gone."""
    found = []
    for recorded in run.tools:
        name = recorded.name
        tool = registry.get(name)
        if tool is None:
            found.append(Drift(name, "removed", (), run.index))
            continue
        current = tool.definition
        fields = tuple(
            key
            for key, old, new in (
                ("description", recorded.description, current.description),
                ("inputSchema", recorded.input_schema, current.input_schema),
            )
            if not json_equal(old, new)
        )
        if fields:
            found.append(Drift(name, "changed", fields, run.index))
    return found


def unrecorded_input(call: Call) -> str | None:
    """Why the call's input cannot be sent again, or None when it was recorded whole.

    A value over the line cap was recorded as a size-and-hash marker, and a redacted one
    carries `[REDACTED]` where the secret was: sending either back would test the tool
    against something it was never given.
    """
    if is_omitted(call.input):
        return "input not recorded: capped"
    # "[REDACTED" also finds the numbered keys (`[REDACTED-2]`) redaction makes unique. In
    # compact JSON it can only stand inside a string (a key or a value): JSON escapes none
    # of its characters, and no JSON value starts with "R" (after an array's "[").
    if REDACTED[:-1].encode() in orjson.dumps(call.input):
        return "input not recorded: redacted"
    return None


RECORDED_DENIED = "denied when it was recorded: a re-run never runs it"


def side_effects(name: str) -> str:
    """Why a re-run does not run a call of tool `name` without --allow-side-effects."""
    return f"{name} is not marked readOnlyHint or idempotentHint (--allow-side-effects runs it)"


def recorded_denied(call: Call) -> bool:
    """Whether the record says the call was denied (by the policy or a person)."""
    return call.error is not None and call.error.kind == "denied"


def denied_today(reason: str) -> str:
    """What a re-run reports for a call today's approver did not allow."""
    return f"not allowed by the approval policy in force today: {reason}"


def refused_today(
    approver: Approver | None,
    registry: ToolRegistry,
    name: str,
    tool_input: JsonValue,
    *,
    ids: tuple[str, str],
) -> str | None:
    """Why today's approver does not let a call run again (None: it may run), asked before
    the call is dispatched, where nothing is recorded (the offline replay). A tool that is
    gone is left to dispatch, which records it as unknown. `ids`: the run's and the call's,
    as the approver is told them."""
    tool = registry.get(name)
    if approver is None or tool is None:
        return None
    pending = PendingCall(*ids, tool.definition, tool_input, NullSink(), utc_timestamp)
    reason = approver(pending)
    if reason is not None and not isinstance(reason, str):
        raise TypeError("a re-run's approver answers at once: it never waits for a person")
    return reason


def safe_to_repeat(registry: ToolRegistry, name: str) -> bool:
    """Whether the current registry marks the tool readOnlyHint or idempotentHint."""
    tool = registry.get(name)
    # A tool that is gone cannot run: dispatching it only records unknown_tool.
    if tool is None:
        return True
    hints = tool.definition.annotations
    return hints is not None and hints.safe_to_repeat


def held_back(
    registry: ToolRegistry, name: str, recorded: Call | None, *, allow_side_effects: bool
) -> str | None:
    """Why a call may not run again before today's approver is even asked (None: it may):
    the call-by-call re-run and the offline replay both ask this. A call recorded as denied
    never runs again; one whose input was not recorded whole would test the tool against
    what it was never given; a tool of `name` (what the call runs as) with side effects
    runs only when they are allowed. `recorded`: None for a call the record never made."""
    if recorded is not None:
        if recorded_denied(recorded):
            return RECORDED_DENIED
        unrecorded = unrecorded_input(recorded)
        if unrecorded is not None:
            return unrecorded
    if not allow_side_effects and not safe_to_repeat(registry, name):
        return side_effects(name)
    return None


def compare(
    call: Call,
    output: JsonValue,
    failure: ToolError | None,
    redactor: Redactor | None = None,
) -> RerunOutcome[Call]:
    """A recorded call compared with what running it again gave: `output`, or `failure`
    when it failed. The call-by-call re-run and the offline replay both compare this way.
    With `redactor` (what the command's log hides), what the call gives now is redacted
    first, as its record was: a secret it read compares equal to the `[REDACTED]` recorded,
    and is never shown.

    Outputs compare as JSON values (true is not 1); an output too large to record is
    compared by the size and SHA-256 its marker holds. Failures compare by their recorded
    form; a tool unknown then and now matches whatever its message lists (the registry of
    the day, whose changes the drift report names). A call in doubt has nothing to compare
    with: it now succeeds or now fails."""
    shown = redactor.redact_value if redactor is not None and redactor.active else None
    if failure is not None:
        current: JsonObject = to_wire(failure)
        if shown is not None:
            current = shown(current)
        reason = f"{current['kind']}: {current['message']}"
        if call.error is None:
            return RerunOutcome(call, NOW_FAILS, reason, current)
        recorded: JsonObject = to_wire(call.error)
        if json_equal(recorded, current) or call.error.kind == failure.kind == "unknown_tool":
            return RerunOutcome(call, MATCHED, None, current)
        return RerunOutcome(call, DIVERGED, reason, current, json_diff(call, recorded, current))
    # Through JSON and back, so tuples and the like compare as the arrays they record as.
    now = orjson.loads(orjson.dumps(output))
    if shown is not None:
        now = shown(now)
    if call.status != SUCCEEDED:
        return RerunOutcome(call, NOW_SUCCEEDS, None, now)
    then, compared = call.output, now
    if isinstance(then, dict) and is_omitted(then):
        # Too large to record: the marker's size and SHA-256 are what can be compared.
        marker = omitted_marker(orjson.dumps(now), 0)
        compared = {**marker, OMITTED_KEY: then[OMITTED_KEY]}
    if json_equal(then, compared):
        return RerunOutcome(call, MATCHED, None, now)
    return RerunOutcome(call, DIVERGED, None, now, json_diff(call, then, compared))


@attrs.frozen
class RerunAs:
    """The call to dispatch in place of a recorded one whose tool goes by another name
    here (a call of an imported session). The two tools' outputs differ in shape, so the
    re-run is compared with the record by outcome: succeeded or failed, a command's
    non-zero `exitCode` counting as failed (as the other agents record it)."""

    name: str
    input: JsonObject


Translate = Callable[[Run, Call], RerunAs | str | None]
"""What to dispatch for a recorded call of a run: a RerunAs, the reason it cannot be
re-run (it is skipped), or None to dispatch it as recorded."""


def _process_failure(output: JsonValue) -> str | None:
    code = output.get("exitCode") if isinstance(output, dict) else None
    return f"exit code {code}" if isinstance(code, int) and code != 0 else None


@attrs.define
class TranscriptRerun:
    """Re-run the items of a fold (runs as they start, calls as they end), yielding each
    Run, Drift and RerunOutcome in turn.

    Each recorded run gets one new ToolRuntime (so one new run in `sink`). A call is
    executed again only if the *current* registry marks its tool readOnlyHint or
    idempotentHint, unless `allow_side_effects`: the current definition describes the code
    that would run now; and only if `approver` (today's policy) allows it: its runtime
    consults it, recording the decision. In-doubt calls are skipped (nothing to compare
    with), and so are calls recorded as denied. What a call gives now is redacted with
    `redactor` (the command's log's) before it is compared with its record. `translate`
    says what to dispatch for a call of a run whose tools are not mini-harness's (an
    imported session's): see Translate.
    """

    items: Iterable[FoldItem]
    registry: ToolRegistry
    allow_side_effects: bool = attrs.field(default=False, kw_only=True)
    sink: EventSink | None = attrs.field(default=None, kw_only=True)
    translate: Translate | None = attrs.field(default=None, kw_only=True)
    approver: Approver | None = attrs.field(default=None, kw_only=True)
    redactor: Redactor | None = attrs.field(default=None, kw_only=True)
    _runs: dict[str, Run] = attrs.field(factory=dict, init=False, repr=False)
    _runtimes: dict[str, ToolRuntime] = attrs.field(factory=dict, init=False, repr=False)
    _drifted: set[tuple[str, str, tuple[str, ...]]] = attrs.field(
        factory=set, init=False, repr=False
    )

    def __iter__(self) -> Iterator[Run | Drift | RerunOutcome[Call]]:
        for item in self.items:
            if isinstance(item, Run):
                self._runs[item.run_id] = item
                yield item
                for drift in definition_drift(item, self.registry):
                    key = (drift.tool, drift.change, drift.fields)
                    if key not in self._drifted:
                        self._drifted.add(key)
                        yield drift
            else:
                yield self.rerun_call(item)

    def rerun_call(self, call: Call) -> RerunOutcome[Call]:
        if call.status == IN_DOUBT:
            return RerunOutcome(call, SKIPPED, "in doubt: no recorded outcome to compare with")
        run = self._runs.get(call.run_id)
        target = self.translate(run, call) if self.translate and run is not None else None
        if isinstance(target, str):
            return RerunOutcome(call, SKIPPED, target)
        name = call.name if target is None else target.name
        allow = self.allow_side_effects
        reason = held_back(self.registry, name, call, allow_side_effects=allow)
        if reason is not None:
            return RerunOutcome(call, SKIPPED, reason)
        runtime = self._runtimes.get(call.run_id)
        if runtime is None:
            runtime = ToolRuntime(self.registry, self.sink, approver=self.approver)
            self._runtimes[call.run_id] = runtime
        try:
            result = runtime.dispatch(name, call.input if target is None else target.input)
        except ToolDeniedError as exc:
            return RerunOutcome(call, SKIPPED, denied_today(exc.message))
        except ToolCallError as exc:
            if target is not None:
                error = to_wire(tool_error(exc))
                return _compare_outcome(call, target, error, f"{exc.kind}: {exc.message}")
            return compare(call, None, tool_error(exc), self.redactor)
        if target is not None:
            current = orjson.loads(orjson.dumps(result.output))
            return _compare_outcome(call, target, current, _process_failure(current))
        return compare(call, result.output, None, self.redactor)

    def report(self, history: History) -> RerunReport:
        """Run everything and collect the report (one object per call) of `history`, the
        one the items come from."""
        items = list(self)
        outcomes = tuple(item for item in items if isinstance(item, RerunOutcome))
        drift = tuple(item for item in items if isinstance(item, Drift))
        if not history.calls:
            history.calls = tuple(outcome.call for outcome in outcomes)
        return RerunReport(history, outcomes, drift)


def _compare_outcome(
    call: Call, target: RerunAs, current: JsonValue, failure: str | None
) -> RerunOutcome[Call]:
    """A call re-run as `target` compared with its record by outcome: `failure` says why
    the re-run failed (None: it succeeded). A recorded command that exited non-zero
    (`exitCode` in its output) failed, as a re-run that does."""
    done = f"re-run as {target.name}"
    failed_then = call.status != SUCCEEDED or _process_failure(call.output) is not None
    if (failure is None) != failed_then:
        return RerunOutcome(call, MATCHED, done, current)
    if failure is None:
        return RerunOutcome(call, NOW_SUCCEEDS, done, current)
    return RerunOutcome(call, NOW_FAILS, f"{done}: {failure}", current)


def rerun_transcript(
    path: str | os.PathLike[str],
    registry: ToolRegistry,
    *,
    allow_side_effects: bool = False,
    sink: EventSink | None = None,
    run: str | None = None,
    approver: Approver | None = None,
) -> RerunReport:
    """Re-run a transcript's calls against `registry` and compare each with its record
    (reading it once: a pipe will do)."""
    fold = TranscriptFold(path, run=run)
    rerun = TranscriptRerun(
        fold, registry, allow_side_effects=allow_side_effects, sink=sink, approver=approver
    )
    return rerun.report(fold.history)
