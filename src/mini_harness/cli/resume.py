"""`mini-harness resume` and `mini-harness fork`: continue or branch a recorded agent run.

Both append a new run to a transcript that names the run it came from (`resumedFrom` or
`forkedFrom`, with the step); the run it came from is never changed, except that resume
closes its calls in doubt as `interrupted`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from mini_harness.cli.agent import EXIT_CODES, PrintingReporter, choose_model_provider
from mini_harness.cli.coding import approve_option, make_approver
from mini_harness.cli.log_options import log_option, log_options, opened_log, warn_quarantined
from mini_harness.cli.output import error, info
from mini_harness.cli.registry_spec import agent_registry, chosen_registry, registry_option

F = Callable[..., Any]


def _continue_options(command: F) -> F:
    """The options resume and fork share with `run`."""
    decorators = [
        click.option(
            "--run",
            "run_id",
            metavar="ID",
            help="The run (id or prefix); default: the last agent run of the transcript.",
        ),
        click.option(
            "--model",
            metavar="PROVIDER:MODEL",
            help="mock, script:FILE, or a model provider (default: from the "
            "environment, else mock).",
        ),
        click.option(
            "--max-steps",
            type=click.IntRange(min=1),
            default=None,
            help="At most N model requests in the new run (default: the run's own).",
        ),
        click.option(
            "--workspace",
            metavar="DIR",
            type=click.Path(exists=True, file_okay=False),
            help="Root directory of the file tools (default: the current directory).",
        ),
        registry_option(
            "The tools of this ToolRegistry (or a zero-argument callable returning one) "
            "instead of the built-in tools; the working directory is importable."
        ),
        approve_option,
        click.option("--no-stream", is_flag=True, help="Print whole responses."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON document at the end."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


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
    again. FOLLOW_UP adds a user message (a run that ended with an answer can go on).

    Exit codes: as `run` (0 a final answer, 1 none, 2 usage, 130 interrupted).
    """
    from mini_harness.replay.agent_fold import fold_agent_runs, select_agent_run
    from mini_harness.replay.continuation import continued_config, resume_plan

    _must_exist(path)
    registry = _registry(options)
    settings = _log_settings(options)
    with opened_log(path, settings) as sink:
        _set_torn_tail_aside(sink)  # before the fold reads the file
        runs = fold_agent_runs(path)
        run = select_agent_run(runs, options["run_id"])

        def repeatable(name: str) -> bool:
            tool = registry.get(name)
            hints = tool.definition.annotations if tool is not None else None
            return retry_in_doubt and hints is not None and hints.safe_to_repeat

        plan = resume_plan(runs, run, follow_up=follow_up, retry_in_doubt=repeatable)
        for event in plan.closing_events():
            sink.emit(event)
            if not options["as_json"]:
                info(f"Closed in-doubt call {event.call_id} ({event.name}) as interrupted")
        origin = plan.opening.resumed_from or {}
        config = continued_config(
            run,
            task=follow_up,
            max_steps=options["max_steps"],
            stream=not options["no_stream"] and not options["as_json"],
        )
        what = f"Resuming run {run.run_id} after step {origin.get('step')}"
        _run(sink, registry, config, plan.opening, options, what, path)


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
    from mini_harness.replay.agent_fold import fold_agent_runs, select_agent_run
    from mini_harness.replay.continuation import continued_config, fork_opening

    _must_exist(path)
    run = select_agent_run(fold_agent_runs(path), options["run_id"])
    opening = fork_opening(run, at_step, instruction)
    registry = _registry(options)
    config = continued_config(
        run,
        task=instruction,
        max_steps=options["max_steps"],
        stream=not options["no_stream"] and not options["as_json"],
    )
    target = log or path
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
    with opened_log(target, _log_settings(options)) as sink:
        what = f"Forking run {run.run_id} before step {at_step}"
        _run(sink, registry, config, opening, options, what, target)


def _set_torn_tail_aside(transcript: Any) -> None:
    transcript.recover()
    warn_quarantined(transcript)


def _must_exist(path: str) -> None:
    if not os.path.isfile(path):
        raise click.UsageError(f"cannot read transcript {path}: no such file")


def _log_settings(options: dict[str, Any]) -> dict[str, Any]:
    return {
        key: options.get(key)
        for key in ("fsync", "redact_env", "redact_pattern", "max_event_bytes")
    }


def _registry(options: dict[str, Any]) -> Any:
    """The user's registry, or the built-in tools an agent run gets (coding tools included),
    as for `run`."""
    from mini_harness.cli import root_workspace

    workspace = options["workspace"] or root_workspace()
    if options["registry_spec"] is None:
        return agent_registry(workspace, tuple(options.get("redact_env") or ()))
    return chosen_registry(options["registry_spec"], workspace)


def _run(  # noqa: PLR0917 - the pieces of one continued run
    sink: Any,
    registry: Any,
    config: Any,
    opening: Any,
    options: dict[str, Any],
    what: str,
    path: str,
) -> None:
    """Run the new run to its end and report it as `run` does."""
    from mini_harness.agent.loop import AgentLoop
    from mini_harness.cli import root_workspace
    from mini_harness.runtime import ToolRuntime

    provider = choose_model_provider(options["model"], os.environ)
    as_json = options["as_json"]
    if not as_json:
        info(what)
        info(f"Model provider: {provider.name}")
    reporter = None if as_json else PrintingReporter(provider.name)
    workspace = options["workspace"] or root_workspace()
    approver = make_approver(workspace or os.curdir, options["approve"])
    runtime = ToolRuntime(registry, sink, approver=approver)
    outcome = AgentLoop(runtime, provider, config, reporter).run(opening)
    if as_json:
        document = {
            "runId": outcome.run_id,
            "resumedFrom": opening.resumed_from,
            "forkedFrom": opening.forked_from,
            "stopReason": outcome.stop_reason,
            "finalText": outcome.final_text,
            "steps": outcome.steps,
            "usage": outcome.usage.to_json(),
        }
        click.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())
    else:
        if outcome.steps == 0 and outcome.final_text is not None:
            info("The run had already answered:")
            click.echo(outcome.final_text)
        info(f"Transcript: {path} (run {outcome.run_id})")
    if outcome.error is not None:
        error(outcome.error)
    code = EXIT_CODES[outcome.stop_reason]
    if code:
        raise click.exceptions.Exit(code)
