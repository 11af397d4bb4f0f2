"""Context Explorer reports rebuilt from a history, byte for byte what the live run
printed: an agent run's for one step's request, a tool run's for its recorded calls."""

from __future__ import annotations

import os

import attrs

from mini_harness.agent import context_report, request_parts
from mini_harness.errors import ReplayError
from mini_harness.events import to_wire
from mini_harness.events.measure import estimate_tokens
from mini_harness.replay.history import (
    Call,
    History,
    Run,
    read_history,
    select_agent_run,
    select_step,
)
from mini_harness.runtime.context_report import (
    ContextRow,
    pretty_json,
    render_context_report,
)
from mini_harness.runtime.results import display_failure, display_result


def agent_report(run: Run, step: int | None = None) -> str:
    """The Context Explorer report of an agent run's request of step `step` (the last one
    by default), byte for byte what the live run printed for it."""
    if not run.steps:
        raise ReplayError(f"run {run.run_id} made no model request")
    chosen = run.steps[-1] if step is None else select_step(run, step)
    messages = chosen.request.messages
    parts = request_parts(run.system_prompt, run.rules, run.tools, messages)
    usage = chosen.usage
    return context_report(parts, usage.input_tokens if usage is not None else None)


def agent_context_report(
    path: str | os.PathLike[str], *, step: int | None = None, run_id: str | None = None
) -> str:
    """`replay PATH --context-report [--step N]` for an agent run (the one `run_id` names,
    by the one rule, else the last of the file): the report of step N's request (default:
    the last), byte-identical to what the live run printed."""
    history = read_history(path, requests=True)
    return agent_report(select_agent_run(history, run_id), step)


@attrs.define
class _ToolTokens:
    """What a tool run's calls add to its report: token estimates only, so a long run
    costs no memory per call."""

    results: int = 0
    result_tokens: int = 0
    errors: int = 0
    error_tokens: int = 0


class ContextReports:
    """Each run's report, as the calls of a fold go by (`add` each one): an agent run's
    is that of its request of `step` (default: the last); a tool run's is rebuilt from
    its tool definitions and its calls, as `mini-harness --tool ... --context-report`
    printed it."""

    def __init__(self, *, step: int | None = None) -> None:
        self.step = step
        self._tools: dict[str, _ToolTokens] = {}

    def add(self, call: Call) -> None:
        """Count a call that ended (as the live CLI showed it) into its run's report."""
        if not call.ended:
            return  # a call in doubt has no result: it adds nothing
        tokens = self._tools.get(call.run_id)
        if tokens is None:
            tokens = self._tools[call.run_id] = _ToolTokens()
        duration = call.duration_ms or 0.0
        if call.error is None:
            shown = display_result(call.name, call.input, call.output, duration)
            tokens.results += 1
            tokens.result_tokens += estimate_tokens(pretty_json(shown))
        else:
            shown = display_failure(call.name, call.input, to_wire(call.error), duration)
            tokens.errors += 1
            tokens.error_tokens += estimate_tokens(pretty_json(shown))

    def report(self, run: Run) -> str:
        if run.is_agent:
            return agent_report(run, self.step)
        return render_context_report(self.rows(run))

    def rows(self, run: Run) -> list[ContextRow]:
        """Tool definitions, then one row for the results and one for the errors, if any.

        A run with one successful call (every successful CLI run) gives exactly the rows
        the live `--context-report` printed. Several results are summed in one row.
        """
        definitions = estimate_tokens(pretty_json(to_wire(run.tools)))
        tokens = self._tools.get(run.run_id, _ToolTokens())
        rows = [ContextRow("Tool definitions", definitions)]
        for count, total, one, many in (
            (tokens.results, tokens.result_tokens, "Tool result", "Tool results"),
            (tokens.errors, tokens.error_tokens, "Tool error", "Tool errors"),
        ):
            if count:
                rows.append(ContextRow(one if count == 1 else f"{many} ({count})", total))
        return rows


def context_reports(history: History, *, step: int | None = None) -> dict[str, str]:
    """Each shown run's report (by run id), from a history that holds its calls (as
    `fold_transcript` returns it)."""
    reports = ContextReports(step=step)
    for call in history.calls:
        reports.add(call)
    return {run.run_id: reports.report(run) for run in history.shown}
