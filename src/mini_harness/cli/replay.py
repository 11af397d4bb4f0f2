"""`mini-harness replay`: fold a transcript into a report, or re-run its calls and compare."""

from __future__ import annotations

import functools
import os

import click

from mini_harness.cli.agent_replay import rerun_agent_runs
from mini_harness.cli.coding import accept_policy_option, print_effects
from mini_harness.cli.corpus import corpus_options, replay_corpus, wants_corpus
from mini_harness.cli.log_options import (
    LOG_SETTINGS,
    LogSettings,
    log_option,
    log_options,
    opened_log,
)
from mini_harness.cli.options import (
    APPROVE_HELP,
    STEP_HELP,
    approve_option,
    given_options,
    root_workspace,
    run_option,
    workspace_option,
)
from mini_harness.cli.output import info
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.cli.replay_output import JsonOutput, TextOutput, drive
from mini_harness.cli.session import AgentOptions, AgentSession, model_option
from mini_harness.cli.stored import locate, notice, recorded_workspace
from mini_harness.cli.verified import allow_unverified_option, verified_history
from mini_harness.cli.view import same_file
from mini_harness.errors import UsageError
from mini_harness.replay import ContextReports, Run, TranscriptFold, TranscriptRerun
from mini_harness.replay.history import HeldItems, read_history, select_step
from mini_harness.replay.views import report
from mini_harness.runtime.terminal import printable


@click.command(
    "replay", short_help="Fold a transcript into a report, or --rerun its calls and compare."
)
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@corpus_options
@click.option(
    "--context-report",
    is_flag=True,
    help="Print each run's Context Explorer report, as the live --context-report did.",
)
@run_option("every run", empty_ok=True)
@click.option(
    "--step",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --context-report, an agent run's report for step N's request (default: the "
    f"last), as the live run printed it. {STEP_HELP}",
)
@click.option(
    "--effects",
    is_flag=True,
    help="List each call's file effects (sha256 before and after) and approval decisions.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@click.option("--rerun", is_flag=True, help="Dispatch each recorded call again and compare.")
@registry_option(when="--rerun")
@workspace_option(
    "With --rerun: the directory the built-in file tools work in (default: the one given "
    "before the subcommand, else the current directory)."
)
@click.option(
    "--allow-side-effects",
    is_flag=True,
    help="With --rerun: also run tools not marked readOnlyHint or idempotentHint.",
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
@functools.partial(
    approve_option,
    default=None,
    help_text=f"With --live-model: {APPROVE_HELP} Default: the config's approve, else ask.",
)
@accept_policy_option
@allow_unverified_option
def replay_command(  # noqa: PLR0917 - click passes each option
    paths: tuple[str, ...],
    workers: int | None,
    ray_address: str | None,
    context_report: bool,
    run: str | None,
    step: int | None,
    effects: bool,
    as_json: bool,
    rerun: bool,
    registry_spec: str | None,
    workspace: str | None,
    allow_side_effects: bool,
    log: str | None,
    log_settings: LogSettings,
    live_model: bool,
    model: str | None,
    approve: str | None,
    accept_policy: bool,
    allow_unverified: bool,
) -> None:
    """Fold a transcript back into runs, calls and problems, never calling a handler.

    With --rerun, dispatch each recorded call again against the current registry and report
    it as matched, diverged (with a diff), now-fails, now-succeeds or skipped. Only tools the
    current registry marks readOnlyHint or idempotentHint run again, unless
    --allow-side-effects. A re-run that may change things (--allow-side-effects, --live-model)
    acts on what the transcript says happened, so it needs a file that `transcript verify`
    passes (or --allow-unverified).

    Exit codes: 0 the log is sound (and every re-run call matched or was skipped); 1 the log
    has problems (integrity, protocol, torn tail, in-doubt calls) or a re-run call differs;
    2 the transcript cannot be read or the arguments are wrong; 130 interrupted.

    Several paths, a directory (every *.jsonl below it) or a glob make one corpus report:
    a line per file and totals per tool, error kind and stop reason; the exit code is the
    worst file's. --workers N folds them in N processes, --ray as Ray tasks. A path may be
    a run's id (or a prefix of it) recorded in the session store; the store's directory is
    a corpus like any other. A re-run works in the workspace the runs recorded, unless
    --workspace says otherwise.
    """
    paths = tuple(locate(path).path for path in paths)
    if step is not None and not context_report:
        raise UsageError("--step needs --context-report")
    if effects:
        if rerun or context_report:
            raise UsageError("--effects cannot be combined with --rerun or --context-report")
        if wants_corpus(paths, workers, ray_address):
            raise UsageError("--effects applies to one transcript, not to a corpus")
        print_effects(paths[0], as_json=as_json)
        return
    ctx = click.get_current_context()
    needs = {"--rerun": rerun, "--live-model": live_model}
    for flag, names in (("--rerun", _RERUN_OPTIONS), ("--live-model", _LIVE_OPTIONS)):
        for given in given_options(ctx, names):
            if not needs[flag]:
                raise UsageError(f"{given} needs {flag}")
    if registry_spec is not None and workspace is not None:
        raise UsageError(
            "--workspace applies to the built-in tools; it cannot be used with --registry"
        )
    # `mini-harness --workspace DIR replay ...` sets it on the root command.
    workspace = workspace or root_workspace()
    if wants_corpus(paths, workers, ray_address):
        refused = {"--run": run, "--context-report": context_report, "--step": step, "--log": log}
        replay_corpus(
            paths,
            as_json=as_json,
            workers=workers,
            ray_address=ray_address,
            rerun=rerun,
            registry=registry_spec,
            workspace=workspace,
            allow_side_effects=allow_side_effects,
            refused=refused,
        )
    (path,) = paths
    if log is not None and same_file(log, path):
        raise UsageError("--log must name a new file, not the transcript being replayed")
    _check_step(path, run, step)
    # With --rerun, agent runs' requests are rebuilt for the offline replay.
    fold = TranscriptFold(path, run=run, requests=context_report or rerun)
    output = JsonOutput if as_json else TextOutput
    reports = ContextReports(step=step) if context_report else None
    out = output(fold, rerun=rerun, registry_spec=registry_spec, context_reports=reports)
    if not rerun:
        code = drive(fold, iter(fold), out)
        # The text report ends with the tree of agent runs that continue each other, if any.
        lines = report.run_tree_lines(fold.history) if not as_json and code != 130 else []
        if lines:
            click.echo(printable("\n".join(lines)))
        raise click.exceptions.Exit(code)
    unverified = _verified(path, live_model, allow_side_effects, allow_unverified)
    if workspace is None and registry_spec is None:
        workspace = _recorded_workspace(path, run, as_json=as_json)
    # With --live-model the re-run's tools are the new run's (cli/session.py).
    options = AgentOptions(model, registry_spec, workspace, approve, accept_policy, as_json=as_json)
    live = AgentSession(options, log_settings) if live_model else None
    tools = live.tools(path, log) if live else agent_tools(registry_spec, workspace)
    held = _read_once(fold)
    # Agent runs are replayed offline with their recorded model answers (cli/agent_replay.py).
    agent_code = rerun_agent_runs(
        path,
        fold.history,
        tools,
        allow_side_effects=allow_side_effects,
        as_json=as_json,
        live=live,
        log=log,
        unverified=unverified,
    )
    if agent_code is not None:
        raise click.exceptions.Exit(agent_code)
    with opened_log(log, log_settings) as sink:
        runner = TranscriptRerun(held, tools, allow_side_effects=allow_side_effects, sink=sink)
        code = drive(fold, iter(runner), out)
    if log is not None:
        info(f"Re-run recorded in {log}")
    raise click.exceptions.Exit(code)


_RERUN_OPTIONS = (
    "allow_unverified",
    "registry_spec",
    "workspace",
    "allow_side_effects",
    "log",
    "live_model",
    *LOG_SETTINGS,
)
_LIVE_OPTIONS = ("model", "approve", "accept_policy")


def _check_step(path: str, run: str | None, step: int | None) -> None:
    """ReplayError (exit 2) if an agent run of `path` (of `run`) made no step `step`: said
    before the fold prints anything. A pipe is read once: there it is said at the end."""
    if step is not None and os.path.isfile(path):
        for each in read_history(path, run=run, requests=True).runs:
            if each.is_agent:
                select_step(each, step)


def _verified(
    path: str, live_model: bool, allow_side_effects: bool, allow_unverified: bool
) -> tuple[str, ...] | None:
    """A re-run that may change things (a live model, side effects) acts on what PATH
    records: PATH must be a file that verifies, or --allow-unverified is given. Returns the
    problems passed over, if any."""
    acting = "--live-model" if live_model else "--allow-side-effects"
    if not (live_model or allow_side_effects):
        return None
    if not os.path.isfile(path):
        raise UsageError(
            f"{acting} acts on what PATH records, so PATH must be a file that is verified "
            "first, not a pipe: save it to a file"
        )
    return verified_history(path, f"re-run with {acting}", allow=allow_unverified)


def _recorded_workspace(path: str, run: str | None, *, as_json: bool) -> str | None:
    """Where the runs re-run worked, when a run recorded it: that of the run `--run`
    names, else of the last run that recorded one. Read from a file only (a pipe is read
    once, by the re-run)."""
    if not os.path.isfile(path):
        return None
    recorded = [each for each in read_history(path, run=run).shown if each.workspace]
    if not recorded:
        return None
    return recorded_workspace(recorded[-1], lambda message: notice(message, as_json=as_json))


def _read_once(fold: TranscriptFold) -> HeldItems:
    """Read the transcript once (a pipe will do), holding its items to re-run them call by
    call when it has no agent run; once an agent run shows, the offline replay takes the
    file, and nothing more is held."""
    held = HeldItems()
    holding = True
    for item in fold:
        if holding and isinstance(item, Run) and item.is_agent:
            holding, held = False, HeldItems()
        if holding:
            held.add(item)
    return held
