"""`mini-harness resume` and `mini-harness fork`: continue or branch a recorded agent run.

Both append a new run to a transcript that names the run it came from (`resumedFrom` or
`forkedFrom`, with the step); the run it came from is never changed, except that resume
closes its calls in doubt as `interrupted`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NoReturn

import attrs
import click

from mini_harness.agent.approval import PolicyApprover
from mini_harness.agent.loop import AgentLoop, Opening
from mini_harness.agent.provider import ModelProvider
from mini_harness.agent.providers import choose_provider, provider_secrets
from mini_harness.cli.agent import PrintingReporter, agent_options, exit_code, print_document
from mini_harness.cli.coding import accept_policy_option, continued_approver
from mini_harness.cli.log_options import (
    log_option,
    log_options,
    opened_log,
    redactor_for,
    warn_quarantined,
)
from mini_harness.cli.options import option_group, root_workspace, workspace_option
from mini_harness.cli.output import info
from mini_harness.cli.registry_spec import agent_tools
from mini_harness.cli.verified import allow_unverified_option, verified_history
from mini_harness.events import EventSink, ToolFailed, to_wire
from mini_harness.replay.agent_fold import AgentRun, select_agent_run
from mini_harness.replay.continuation import continued_config, fork_opening, resume_plan
from mini_harness.replay.fold import fold_agent_runs
from mini_harness.replay.rerun import safe_to_repeat
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.runtime.terminal import printable
from mini_harness.transcripts import JsonlTranscript

_continue_options = option_group(
    click.option(
        "--run",
        "run_id",
        metavar="ID",
        help="The run (id or prefix); default: the last agent run of the transcript.",
    ),
    click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=None,
        help="At most N model requests in the new run (default: the run's own).",
    ),
    workspace_option("Root directory of the file tools (default: the current directory)."),
    agent_options,
    allow_unverified_option,
    accept_policy_option,
)
"""The options of resume and fork: which run, its step limit, and those of `run`."""


@click.command("resume", short_help="Continue an agent run as a new run that names it.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("follow_up", required=False)
@_continue_options
@click.option(
    "--retry-in-doubt",
    is_flag=True,
    help="Run a call in doubt again if its tool is read-only or idempotent (default: the "
    "model is told it was interrupted).",
)
@log_options
def resume_command(
    path: str,
    follow_up: str | None,
    *,
    retry_in_doubt: bool,
    **options: Any,
) -> None:
    """Continue an agent run of the transcript PATH, as a new run appended to it.

    Finished tool calls are never run again; a call in doubt (the process died while it
    ran) is recorded as interrupted and the model is told so; a request in doubt is sent
    again. FOLLOW_UP adds a user message (a run that ended with an answer can go on). A
    run is continued once (fork branches it again), and only from a transcript that
    verifies.

    Exit codes: as `run` (0 a final answer, 1 none, 2 usage, 130 interrupted).
    """
    _must_exist(path)
    registry = _registry(options, path)
    provider = choose_provider(options["model"], os.environ)
    keys = provider_secrets(provider)
    with opened_log(path, options, keys) as log:
        transcript = _recovered(log)  # before anything reads the file
        since = transcript.end  # every run that resumes one after this is checked
        unverified = verified_history(path, "resume", allow=options["allow_unverified"])
        runs = fold_agent_runs(path)
        run = select_agent_run(runs, options["run_id"])
        approver = _approver(options, run)

        def repeatable(name: str) -> bool:  # a tool that is gone is not run again
            known = registry.get(name) is not None
            return retry_in_doubt and known and safe_to_repeat(registry, name)

        plan = resume_plan(runs, run, follow_up=follow_up, retry_in_doubt=repeatable)
        opening = attrs.evolve(plan.opening, unverified=unverified)
        origin = opening.resumed_from
        what = f"Resuming run {run.run_id} after step {origin.step if origin else None}"
        # Its RunStarted claims the run, under the file's lock, before anything is done.
        sink = transcript.continuing(run.run_id, since=since, read=plan.read)
        _run(
            sink, registry, approver, provider, run, follow_up, opening, options, what, path,
            plan.closing_events(),
        )  # fmt: skip


@click.command("fork", short_help="Branch an agent run off before a step, as a new run.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.argument("instruction", required=False)
@click.option(
    "--at-step",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Branch off before step N's model request.",
)
@_continue_options
@log_option("Write the fork to this transcript instead of appending it to PATH.")
@log_options
def fork_command(
    path: str,
    instruction: str | None,
    *,
    at_step: int,
    log: str | None,
    **options: Any,
) -> None:
    """Start a new run from an agent run of PATH as it stood before step N's request.

    INSTRUCTION adds a user message. The new run records `forkedFrom` (run id and step);
    the original run is not changed. It is appended to PATH, or written to --log OUT.

    Exit codes: as `run` (0 a final answer, 1 none, 2 usage, 130 interrupted).
    """
    _must_exist(path)
    unverified = verified_history(path, "fork", allow=options["allow_unverified"])
    run = select_agent_run(fold_agent_runs(path), options["run_id"])
    opening = attrs.evolve(fork_opening(run, at_step, instruction), unverified=unverified)
    approver = _approver(options, run)
    registry = _registry(options, path, log)
    target = log or path
    provider = choose_provider(options["model"], os.environ)
    keys = provider_secrets(provider)
    with opened_log(target, options, keys) as sink:
        what = f"Forking run {run.run_id} before step {at_step}"
        _run(
            sink, registry, approver, provider, run, instruction, opening, options, what, target
        )  # fmt: skip


def _recovered(log: EventSink) -> JsonlTranscript:
    """The log, its torn tail set aside (and said so)."""
    if not isinstance(log, JsonlTranscript):  # opened_log with a path gives one
        raise TypeError(f"not a transcript: {log!r}")
    log.recover()
    warn_quarantined(log)
    return log


def _must_exist(path: str) -> None:
    if not os.path.isfile(path):
        raise click.UsageError(f"cannot read transcript {path}: no such file")


def _registry(options: dict[str, Any], *transcripts: str | None) -> ToolRegistry:
    """The user's registry, or the built-in tools an agent run gets, as for `run`, with the
    `transcripts` the run reads and writes out of their reach."""
    workspace = options["workspace"] or root_workspace()
    redacted = tuple(options["redact_env"] or ())
    return agent_tools(options["registry_spec"], workspace, redacted, protected=transcripts)


def _approver(options: dict[str, Any], run: AgentRun) -> PolicyApprover:
    """The approval policy of the new run: the workspace's, checked against `run`'s."""
    workspace = options["workspace"] or root_workspace() or os.curdir
    return continued_approver(
        workspace,
        options["approve"],
        run.run_id,
        run.policy_sha256,
        accept=options["accept_policy"],
    )


def _run(  # noqa: PLR0917 - the pieces of one continued run
    sink: EventSink,
    registry: ToolRegistry,
    approver: PolicyApprover,
    provider: ModelProvider,
    run: AgentRun,
    task: str | None,
    opening: Opening,
    options: dict[str, Any],
    what: str,
    path: str,
    closing: Sequence[ToolFailed] = (),
) -> NoReturn:
    """Run the new run, continuing `run` with `task`, to its end and report it as `run`
    does. Its RunStarted comes first (for a resume, the claim), then the `closing` events
    of the calls in doubt it closes."""
    as_json = options["as_json"]
    keys = provider_secrets(provider)
    printer = PrintingReporter(provider.name, redactor_for(options, keys))
    config = continued_config(
        run,
        task=task,
        max_steps=options["max_steps"],
        stream=not options["no_stream"] and not as_json,
    )
    runtime = ToolRuntime(registry, sink, approver=approver)
    loop = AgentLoop(runtime, provider, config, None if as_json else printer)
    loop.start(opening)
    if not as_json:
        info(what)
    for event in closing:
        sink.emit(event)
        if not as_json:
            info(f"Closed in-doubt call {event.call_id} ({event.name}) as interrupted")
    if not as_json:
        info(f"Model provider: {provider.name}")
    outcome = loop.run(opening)
    if as_json:
        origin = {
            "resumedFrom": to_wire(opening.resumed_from),
            "forkedFrom": to_wire(opening.forked_from),
        }
        print_document(outcome, printer, **origin)
    else:
        if outcome.steps == 0 and outcome.final_text is not None:
            info("The run had already answered:")
            click.echo(printable(printer.shown(outcome.final_text)))
        info(f"Transcript: {path} (run {outcome.run_id})")
    raise click.exceptions.Exit(exit_code(outcome, printer))
