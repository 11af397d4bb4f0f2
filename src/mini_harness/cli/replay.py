"""`mini-harness replay`: fold a transcript into a report, or re-run its calls and compare."""

from __future__ import annotations

from collections.abc import Iterable

import click

from mini_harness.cli.agent_replay import rerun_agent_runs
from mini_harness.cli.coding import accept_policy_option, print_effects
from mini_harness.cli.corpus import corpus_options, replay_corpus, wants_corpus
from mini_harness.cli.log_options import (
    LOG_SETTINGS,
    LogSettings,
    log_option,
    log_options,
)
from mini_harness.cli.options import (
    context_report_option,
    json_option,
    refuse_without,
    run_option,
    step_option,
)
from mini_harness.cli.output import aside, echo, info, protect_configured_keys
from mini_harness.cli.replay_output import JsonOutput, TextOutput, drive
from mini_harness.cli.rerun import RerunOptions, rerun_options
from mini_harness.cli.session import AgentOptions, AgentSession, model_option
from mini_harness.cli.stored import locate
from mini_harness.cli.view import same_file
from mini_harness.errors import UsageError
from mini_harness.replay import ContextReports, Run, TranscriptFold
from mini_harness.replay.history import FoldItem, HeldItems, History, select_step
from mini_harness.replay.views import report


@click.command(
    "replay", short_help="Fold a transcript into a report, or --rerun its calls and compare."
)
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path())
@corpus_options
@context_report_option(
    "Print each run's Context Explorer report, as the live --context-report did."
)
@run_option("every run", empty_ok=True)
@step_option(
    "With --context-report, an agent run's report for step N's request (default: the "
    "last), as the live run printed it."
)
@click.option(
    "--effects",
    is_flag=True,
    help="List each call's file effects (sha256 before and after) and approval decisions.",
)
@json_option("Print one JSON document instead of text.")
@rerun_options(
    "Dispatch each recorded call again and compare.",
    "log",
    "live_model",
    *LOG_SETTINGS,
    approve_also=" With --live-model, the live run's calls are decided as `run` decides them "
    "(asking on a terminal; default: the config's approve, else ask).",
)
@log_option(
    "with --rerun, the re-run is not recorded; the run --live-model adds is appended to PATH"
)
@log_options
@click.option(
    "--live-model",
    is_flag=True,
    help="With --rerun of an agent run: where the record stops answering (divergence), go on "
    "with a live model as a new run that names the replayed one (forkedFrom), as `fork` does.",
)
@model_option("With --live-model: ")
@accept_policy_option
def replay_command(  # noqa: PLR0917 - click passes each option
    paths: tuple[str, ...],
    workers: int | None,
    ray_address: str | None,
    context_report: bool,
    run: str | None,
    step: int | None,
    effects: bool,
    as_json: bool,
    rerun: RerunOptions,
    log: str | None,
    log_settings: LogSettings,
    live_model: bool,
    model: str | None,
    accept_policy: bool,
) -> None:
    """Fold a transcript back into runs, calls and problems, never calling a handler.

    With --rerun, dispatch each recorded call again against the current registry and report
    it as matched, diverged (with a diff), now-fails, now-succeeds or skipped. Only tools the
    current registry marks readOnlyHint or idempotentHint run again, unless
    --allow-side-effects, and only calls today's approval policy allows (--approve; a
    re-run never prompts); a call recorded as denied never runs again. A re-run that may
    change things (--allow-side-effects, --live-model) acts on what the transcript says
    happened, so it needs a file that `transcript verify` passes (or --allow-unverified).

    Exit codes: 0 the log is sound (and every re-run call matched or was skipped); 1 the log
    has problems (integrity, protocol, torn tail, in-doubt calls) or a re-run call differs;
    2 the transcript cannot be used (it cannot be read, or is damaged mid-file) or the
    arguments are wrong; 130 interrupted.

    Several paths, a directory (every *.jsonl below it) or a glob make one corpus report:
    a line per file and totals per tool, error kind and stop reason; the exit code is the
    worst file's. --workers N folds them in N processes, --ray as Ray tasks. A path may be
    a run's id (or a prefix of it) recorded in the session store; the store's directory is
    a corpus like any other. A re-run works in the workspace the runs recorded, unless
    --workspace says otherwise.
    """
    protect_configured_keys()  # whatever the transcript or a re-run shows, no key
    paths = tuple(locate(path).path for path in paths)
    ctx = click.get_current_context()
    refuse_without(ctx, ("step",), "--context-report", given=context_report)
    if effects:
        if rerun.rerun or context_report:
            raise UsageError("--effects cannot be combined with --rerun or --context-report")
        if wants_corpus(paths, workers, ray_address):
            raise UsageError("--effects applies to one transcript, not to a corpus")
        print_effects(paths[0], as_json=as_json)
        return
    refuse_without(ctx, _LIVE_OPTIONS, "--live-model", given=live_model)
    if wants_corpus(paths, workers, ray_address):
        refused = {"--run": run, "--context-report": context_report, "--step": step, "--log": log}
        replay_corpus(
            paths,
            as_json=as_json,
            workers=workers,
            ray_address=ray_address,
            rerun=rerun,
            refused=refused,
        )
    (path,) = paths
    if log is not None and same_file(log, path):
        raise UsageError("--log must name a new file, not the transcript being replayed")
    # With --rerun, agent runs' requests are rebuilt for the offline replay.
    fold = TranscriptFold(path, run=run, requests=context_report or rerun.rerun)
    output = JsonOutput if as_json else TextOutput
    reports = ContextReports(step=step) if context_report else None
    out = output(
        fold, rerun=rerun.rerun, registry_spec=rerun.registry_spec, context_reports=reports
    )
    if not rerun.rerun:
        items: Iterable[FoldItem] = fold
        if step is not None:  # said before anything is printed: the one reading comes first
            items = _held(fold)
            _check_step(fold.history, step)
        code = drive(fold, iter(items), out)
        # The text report ends with the tree of agent runs that continue each other, if any.
        lines = report.run_tree_lines(fold.history) if not as_json and code != 130 else []
        if lines:
            echo("\n".join(lines))
        raise click.exceptions.Exit(code)
    unverified = rerun.verified(path, live_model=live_model)
    held = _read_once(fold)  # the one reading (a pipe will do): the runs, and their workspace
    _check_step(fold.history, step)
    workspace = rerun.where(fold.history, as_json=as_json)
    # The re-run acts as every command that acts (cli/acting.py): its settings read where
    # it works, its secrets hidden from its log, its screen and its comparisons. With
    # --live-model the session is the new run's (cli/session.py).
    live = None
    if live_model:
        options = AgentOptions(
            model, rerun.registry_spec, workspace, rerun.approve, accept_policy, as_json=as_json
        )
        live = AgentSession(options, log_settings)
    session = live or rerun.session(workspace, log_settings)
    tools = live.tools(path, log) if live else rerun.tools(session, path, log)
    # Agent runs are replayed offline with their recorded model answers (cli/agent_replay.py).
    agent_code = rerun_agent_runs(
        path,
        fold.history,
        tools,
        allow_side_effects=rerun.allow_side_effects,
        as_json=as_json,
        live=live,
        log=log,
        unverified=unverified,
        approver=rerun.approver(session),  # today's policy; it never prompts
        redactor=session.redactor,
    )
    if agent_code is not None:
        raise click.exceptions.Exit(agent_code)
    with session.log(log, aside if as_json else info) as sink:
        code = drive(fold, iter(rerun.calls(held, tools, session, sink)), out)
    if log is not None:
        info(f"Re-run recorded in {log}")
    raise click.exceptions.Exit(code)


_LIVE_OPTIONS = ("model", "accept_policy")


def _check_step(history: History, step: int | None) -> None:
    """ReplayError (exit 2) if an agent run of `history` made no step `step`."""
    if step is not None:
        for each in history.runs:
            if each.is_agent:
                select_step(each, step)


def _held(fold: TranscriptFold) -> HeldItems:
    """Read the transcript once (a pipe will do), holding its items to go through again."""
    held = HeldItems()
    for item in fold:
        held.add(item)
    return held


def _read_once(fold: TranscriptFold) -> HeldItems:
    """Read the transcript once (a pipe will do), holding its items to re-run them call by
    call when it has no agent run; once an agent run shows, the offline replay takes the
    file, and nothing more is held."""
    held = HeldItems()
    holding = True
    for item in fold:
        if holding and isinstance(item, Run) and item.replays_offline:
            holding, held = False, HeldItems()
        if holding:
            held.add(item)
    return held
