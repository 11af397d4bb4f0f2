"""`mini-harness show`: a transcript as a readable timeline, or its selected events as JSON
lines."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, NoReturn

import click

from mini_harness.cli.options import (
    SingleOption,
    json_option,
    root_workspace,
    run_option,
    step_option,
)
from mini_harness.cli.output import (
    aside,
    columns,
    echo,
    echo_json_lines,
    error,
    info,
    protect_configured_keys,
    use_colour,
    verdict,
)
from mini_harness.cli.stored import last_option, locate
from mini_harness.errors import ExitCode, UsageError, exit_code_of

if TYPE_CHECKING:
    from mini_harness.replay.history import History
    from mini_harness.replay.views.filters import Selection

STATUS_CHOICES = ("failed", "succeeded", "in-doubt")


@click.command("show", short_help="Print a transcript as a readable timeline.")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@last_option("run")
@run_option("every run")
@step_option("Only this step of agent runs.")
@click.option(
    "--tool",
    "tools",
    metavar="NAME",
    multiple=True,
    help="Only calls of this tool (repeat for several).",
)
@click.option(
    "--status",
    cls=SingleOption,
    type=click.Choice(STATUS_CHOICES),
    help="Only calls and model turns that ended so.",
)
@click.option(
    "--grep",
    cls=SingleOption,
    metavar="TEXT",
    help="Only calls whose input, output or error (and model turns whose text) "
    "contain TEXT, ignoring case.",
)
@click.option("--full", is_flag=True, help="Print model text, inputs and outputs whole.")
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Follow a run as it is written: each run as it starts and each call as it ends, "
    "until every agent run has finished (or Ctrl-C). PATH may be a run's id or --last.",
)
@json_option("Print the selected events as JSON lines.")
def show_command(  # noqa: PLR0917 - click passes each option as an argument
    path: str | None,
    last: bool,
    run: str | None,
    step: int | None,
    tools: tuple[str, ...],
    status: str | None,
    grep: str | None,
    full: bool,
    follow: bool,
    as_json: bool,
) -> None:
    """Print PATH as a timeline: runs (a tree when they resume or fork), steps, model
    turns, tool calls with input and output, failures, approvals, durations and usage.
    Long text is cut to the terminal width (--full prints it whole). PATH may be a pipe,
    or - for standard input, or a run's id (or a prefix of it) recorded in the session
    store: its whole transcript is shown; --last shows the newest of this workspace.

    Exit codes: 0 shown; 1 the log has problems (a broken chain or call protocol, a torn
    tail, calls in doubt, an unfinished run), or the filters matched nothing; 2 it cannot
    be used: it cannot be read as a transcript, or is damaged mid-file (shown up to the
    damage, the problem named); or bad options. --follow ends by the same rule.
    """
    from mini_harness.replay.history import read_history
    from mini_harness.replay.views import describe
    from mini_harness.replay.views.filters import Selection, select, selected_events

    protect_configured_keys()  # what the transcript holds is shown without any key
    located = locate(path, last=last, workspace=root_workspace())
    selection = Selection(run=run, step=step, tools=tools, status=status, grep=grep)
    if follow:
        if selection.narrows or as_json:
            raise UsageError("--follow shows the whole run: no filters, no --json")
        _follow(located.path, full=full)
    history = read_history(located.path, detail=True, damage=True)
    history.name = located.source or history.name  # another agent's file, not its import
    shown = select(history, selection)
    if selection.narrows and not shown.roots:
        _report_problems(history, quiet=as_json)
        code, message = describe.verdict_of(history)
        if code:
            error(message)
        error(f"nothing in {history.name} matched {_filters(selection)}")
        raise click.exceptions.Exit(max(code, exit_code_of(failed=True)))
    if as_json:
        echo_json_lines(selected_events(shown, selection))
    else:
        _print_text(shown, full=full)
    _report_problems(history, quiet=as_json)
    verdict(*describe.verdict_of(history))


def _print_text(history: History, *, full: bool) -> None:
    from mini_harness.replay.views.text import counts_line, timeline_lines
    from mini_harness.runtime.text_style import TextStyle

    style = TextStyle(width=columns(120), full=full, colour=use_colour(sys.stdout))
    batch: list[str] = []
    for line in timeline_lines(history, style):
        batch.append(line)
        if len(batch) >= 1024:
            echo("\n".join(batch), colours=style.colour)
            batch.clear()
    if batch:
        echo("\n".join(batch), colours=style.colour)
    info(counts_line(history))


def _follow(path: str, *, full: bool) -> NoReturn:
    """Print the transcript at `path` as it is written (the one fold over a growing file):
    each run as it starts, each call as it ends; at the end how each run finished. Stops
    once every agent run has finished (exit as `show`), or at Ctrl-C (exit 130): a file
    of tool dispatches alone is followed until then."""
    from mini_harness.replay.history import Call, TranscriptFold
    from mini_harness.replay.views import describe
    from mini_harness.replay.views.text import call_lines, counts_line, finished_lines
    from mini_harness.runtime.text_style import TextStyle

    def running() -> bool:  # until there is an agent run and every one has finished
        agent = [run for run in fold.history.runs if run.is_agent]
        return not agent or any(run.finished is None for run in agent)

    style = TextStyle(width=columns(120), full=full, colour=use_colour(sys.stdout))
    fold = TranscriptFold(path, detail=True, damage=True, follow=running)
    try:
        info(f"Following {fold.reader.name} (Ctrl-C to stop)")
        for item in fold:
            if isinstance(item, Call):
                lines = list(call_lines(item, 2, style))
            else:
                task = f" · task: {style.cut(item.task, 40)}" if item.is_agent else ""
                lines = [style.paint(f"Run {item.index} {item.run_id}", "1") + task]
            echo("\n".join(lines), colours=style.colour)
    except KeyboardInterrupt:
        click.echo("")
        info("Stopped following.")
        raise click.exceptions.Exit(ExitCode.INTERRUPTED) from None
    history = fold.history
    for each in history.runs:
        if each.finished is not None:
            echo(f"Run {each.index} {each.run_id}")
            echo("\n".join(finished_lines(each, 2, style)), colours=style.colour)
    info(counts_line(history))
    _report_problems(history, quiet=False)
    verdict(*describe.verdict_of(history))


def _filters(selection: Selection) -> str:
    """The filters given, as typed: `--tool nosuch --status failed`."""
    given = [
        ("--run", selection.run),
        ("--step", selection.step),
        *(("--tool", tool) for tool in selection.tools),
        ("--status", selection.status),
        ("--grep", selection.grep),
    ]
    return " ".join(shlex.join([flag, str(value)]) for flag, value in given if value is not None)


def _report_problems(history: History, *, quiet: bool) -> None:
    """Name each problem of the log (on stderr with --json)."""
    from mini_harness.replay.views import describe

    for problem in describe.problems(history):
        message = f"Problem: [{problem.kind}] {problem.describe()}"
        if quiet:
            aside(message)
        else:
            info(message)
