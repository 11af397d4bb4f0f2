"""`mini-harness replay PATH --rerun` on a transcript of agent runs: the offline replay.

Each agent run is replayed with its recorded model answers and today's tools; the first
step whose request differs from the record is reported with the diff that caused it.
With `--live-model` the configured provider takes over where the record stops answering,
as a new run (`forkedFrom`) appended to PATH (or written to `--log OUT`): an agent session
like `fork`'s (cli/session.py), under the workspace's policy with `--approve`.
"""

from __future__ import annotations

from typing import Any

from mini_harness.agent import Opening
from mini_harness.cli.output import echo, echo_json, error, info
from mini_harness.cli.session import AgentSession
from mini_harness.errors import UsageError, exit_code_of
from mini_harness.events import RunOrigin
from mini_harness.replay.continuing.offline import AgentReplay, replay_agent_run
from mini_harness.replay.continuing.outcomes import MATCHED, SKIPPED, RerunOutcome
from mini_harness.replay.history import Call, History
from mini_harness.runtime import ToolRegistry
from mini_harness.runtime.approval import Approver
from mini_harness.transcripts import Redactor


def rerun_agent_runs(
    path: str,
    history: History,
    registry: ToolRegistry,
    *,
    allow_side_effects: bool,
    as_json: bool,
    live: AgentSession | None,
    log: str | None,
    unverified: tuple[str, ...] | None = None,
    approver: Approver | None = None,
    redactor: Redactor | None = None,
) -> int | None:
    """`replay --rerun` of the agent runs of PATH's history (the one `--run` selects, else
    all): replay each; with a `live` session, continue the first one that stops early.
    Returns the exit code (by the one rule, errors.exit_code_of: 1 if a run diverged and
    was not continued, or the log has problems; a live continuation's code is that of
    `run`), or None when there are no agent runs to replay (the call-by-call re-run takes
    the file). `unverified`: the problems of a PATH
    that does not verify, continued anyway (--allow-unverified), for the new run to record.
    `approver` (today's policy, never asking) decides each call the replay would run again;
    what a call gives now is compared with its record redacted with `redactor`."""
    runs = history.offline_runs()
    if not runs and live is not None:
        raise UsageError("--live-model needs an agent run")
    if not runs:
        return None
    differs = False
    documents = []
    for found in runs:
        if not as_json:
            info(
                f"Replaying agent run {found.run_id} of {path} offline "
                "(recorded model answers, tools run again)"
            )
        replay = replay_agent_run(
            found,
            registry,
            allow_side_effects=allow_side_effects,
            on_call=(lambda call: None) if as_json else _print_call,
            approver=approver,
            redactor=redactor,
        )
        if as_json:
            documents.append(_document(replay))
        elif replay.diverged_at is not None:
            error(replay.summary)
            for diff in replay.diffs:
                echo("\n".join("    " + line for line in diff.splitlines()))
        else:
            info(replay.summary)
        differs = differs or replay.diverged_at is not None
        if live is not None and replay.stopped_at is not None:
            return _continue(path, replay, registry, live, log, unverified)
    problems = history.problems
    if as_json:
        shown = [problem.to_json() for problem in problems]
        echo_json({"path": path, "agentRuns": documents, "problems": shown})
    elif problems:
        lines = ["", "Problems with the log:"]
        lines += [f"  [{problem.kind}] {problem.describe()}" for problem in problems]
        echo("\n".join(lines))
    kinds = [problem.kind for problem in problems]
    return exit_code_of(problems=kinds, in_doubt=history.totals.in_doubt, differs=differs)


def _how(call: RerunOutcome[Call | None]) -> str:
    """How a call of the offline replay got its result: re-run; served (the recorded
    result given for a call not run again); not-run (no recorded result to give)."""
    if call.outcome != SKIPPED:
        return "re-run"
    return "served" if call.call is not None else "not-run"


def _same(call: RerunOutcome[Call | None]) -> bool:
    """Whether the call's result is the recorded one (a served result is)."""
    return call.outcome == MATCHED or _how(call) == "served"


def _print_call(call: RerunOutcome[Call | None]) -> None:
    how = _how(call)
    if how == "re-run":
        how = "re-run, same result" if _same(call) else "re-run, the result differs from the record"
    elif how == "served":
        how = f"served from the record ({call.reason})"
    else:
        how = f"not run ({call.reason}); the record has no result for it"
    assert call.asked is not None  # an offline replay's calls say what was asked
    info(f"Step {call.step}: {call.asked.name} {call.asked.arguments}: {how}")


def _document(replay: AgentReplay) -> dict[str, Any]:
    return {
        "runId": replay.run.run_id,
        "identicalThrough": replay.identical_through,
        "divergedAt": replay.diverged_at,
        "explanation": replay.explanation or None,
        "diffs": replay.diffs,
        "recordEnded": replay.record_ended,
        "calls": [
            {
                "step": call.step,
                "toolUseId": call.asked.id,
                "name": call.asked.name,
                "how": _how(call),
                "same": _same(call),
                **call.to_json(),
            }
            for call in replay.calls
            if call.asked is not None  # an offline replay's calls say what was asked
        ],
    }


def _continue(  # noqa: PLR0917 - the pieces of one continuation
    path: str,
    replay: AgentReplay,
    registry: ToolRegistry,
    session: AgentSession,
    log: str | None,
    unverified: tuple[str, ...] | None,
) -> int:
    """Go on from where the record stopped answering with the session's model, as a new
    run that names the replayed run and step (appended to PATH, or written to `log`)."""
    assert replay.stopped_at is not None  # the caller checked
    step, request = replay.stopped_at
    target = log or path
    approver = session.approver(continuing=replay.run)
    what = (
        f"Continuing from step {step} with {session.provider.name}, as a new run forked from "
        f"{replay.run.run_id}"
    )
    origin = RunOrigin(replay.run.run_id, step)
    opening = Opening(
        request.messages, forked_from=origin, unverified=unverified, steps_before=step - 1
    )
    with session.log(target) as sink:
        return session.continue_run(
            sink, registry, approver, replay.run, opening, transcript=target, what=what,
            enclosing=lambda live: {**_document(replay), "live": live},
        )  # fmt: skip
