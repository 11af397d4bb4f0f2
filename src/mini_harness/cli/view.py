"""`mini-harness view`: a transcript as one self-contained HTML page."""

from __future__ import annotations

import os
from pathlib import Path

import click

from mini_harness.cli.options import SingleOption
from mini_harness.cli.output import error, info, protect_configured_keys, verdict
from mini_harness.cli.rerun import RerunOptions, rerun_options
from mini_harness.cli.stored import last_option, locate
from mini_harness.errors import UsageError, exit_code_of
from mini_harness.replay import TranscriptFold
from mini_harness.replay.continuing.outcomes import DIFFERING, differing
from mini_harness.replay.views import describe
from mini_harness.replay.views.page import render_page, step_contexts
from mini_harness.transcripts.beside import open_directory, write_beside


def default_output(path: str) -> Path:
    """t.jsonl -> t.html beside it; standard input -> transcript.html here."""
    if path == "-":
        return Path("transcript.html")
    source = Path(path)
    if source.suffix == ".html":
        return source.with_name(source.name + ".html")
    return source.with_suffix(".html")


@click.command("view", short_help="Write a transcript as a self-contained HTML page.")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@last_option("run")
@click.option(
    "-o",
    "--output",
    cls=SingleOption,
    metavar="FILE.html",
    type=click.Path(dir_okay=False),
    help="Where to write the page (default: PATH with .html, or transcript.html for -).",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in a web browser.")
@rerun_options(
    "Re-run the recorded calls (as `replay --rerun` does) and show each outcome and diff.",
    workspace_also="; with --last: the workspace whose newest run is shown",
    unless={"workspace": "last"},
)
def view_command(
    path: str | None,
    last: bool,
    output: str | None,
    open_page: bool,
    rerun: RerunOptions,
) -> None:
    """Write PATH as one HTML file that opens from disk (no network: its script, style and
    data are inline): the timeline with collapsible runs, steps and calls, search and
    filters, each step's context by part, durations, and whether the hash chain is
    intact. With --rerun, each call is dispatched again against the current registry
    (read-only and idempotent tools only, unless --allow-side-effects; only what today's
    policy allows with --approve, never a call recorded as denied) and the page shows
    whether it matched, with the diff when it did not. PATH may be a pipe, or - for
    standard input: it is read once; or a run's id (or a prefix of it) recorded in the
    session store; --last takes the newest run of this workspace. A transcript of the store
    gets its page beside it.

    Exit codes: 0 written; 1 written, but the log has problems (a broken chain, a torn
    tail, calls in doubt), a re-run call differs, or --open found no browser to start; 2
    the transcript cannot be used (it cannot be read as one, or is damaged mid-file: the
    page shows it up to the damage and names the problem), or the page cannot be written.
    """
    protect_configured_keys()  # what it prints (a re-run's errors among it) holds no key
    # --last looks in the workspace given (before the subcommand, or with --rerun here).
    located = locate(path, last=last, workspace=rerun.root)
    path = located.path
    # Another agent's session gets its page beside it, not beside its temporary import.
    target = Path(output) if output is not None else default_output(located.source or path)
    if path != "-" and same_file(target, path):
        raise UsageError("the page would overwrite the transcript: give -o FILE.html")
    if rerun.rerun:
        rerun.verified(path)
    # One reading: the timeline, each step's request (for its context) and, for a re-run,
    # the calls in the order they ended (run again where the runs worked).
    fold = TranscriptFold(path, requests=True, detail=True, damage=True)
    reruns = None
    if not rerun.rerun:
        history = fold.read()
    else:
        items = list(fold)
        history = fold.history
        workspace = rerun.where(history)
        session = rerun.session(workspace)  # its secrets hidden from the page and the screen
        tools = rerun.tools(session, path)
        reruns = rerun.calls(items, tools, session).report(history)
    history.name = located.source or history.name  # another agent's file, not its import
    page = render_page(history, step_contexts(history), reruns)
    try:
        write_page(target, page)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    calls = sum(describe.call_counts(history).values())
    info(f"Wrote {target} ({calls:,} calls, {history.events:,} events)")
    problems = describe.problems(history)
    for problem in problems:
        info(f"Problem: [{problem.kind}] {problem.describe()}")
    unopened = False
    if open_page:
        import webbrowser  # only to open the page

        unopened = not webbrowser.open(target.resolve().as_uri())
        if unopened:
            error(f"no web browser could be started; open {target} yourself")
    counts = {name: reruns.count(name) for name in DIFFERING} if reruns is not None else {}
    code, message = describe.verdict_of(history, differing(counts))
    if not code and unopened:  # written, but not shown as asked (said above)
        raise click.exceptions.Exit(exit_code_of(failed=True))
    verdict(code, message)


def write_page(target: Path, page: str) -> None:
    """Write the page to `target`: a new file, or an existing regular file rewritten; never
    through a symlink at its name (it may sit beside a transcript in a workspace a model
    can write, see transcripts/beside.py). OSError says why not."""
    dir_fd, name = open_directory(target)
    try:
        write_beside(dir_fd, name, page.encode("utf-8"), replace=True)
    finally:
        os.close(dir_fd)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether both name one existing file (what cannot be found is not the same file)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
