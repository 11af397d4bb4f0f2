"""`mini-harness view`: a transcript as one self-contained HTML page."""

from __future__ import annotations

import os
from pathlib import Path

import click

from mini_harness.cli import BadUsage, error, info


def default_output(path: str) -> Path:
    """t.jsonl -> t.html beside it; standard input -> transcript.html here."""
    if path == "-":
        return Path("transcript.html")
    source = Path(path)
    if source.suffix == ".html":
        return source.with_name(source.name + ".html")
    return source.with_suffix(".html")


@click.command("view", short_help="Write a transcript as a self-contained HTML page.")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "-o",
    "--output",
    metavar="FILE.html",
    type=click.Path(dir_okay=False),
    help="Where to write the page (default: PATH with .html, or transcript.html for -).",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in a web browser.")
def view_command(path: str, output: str | None, open_page: bool) -> None:
    """Write PATH as one HTML file that opens from disk (no network: its script, style and
    data are inline): the timeline with collapsible runs, steps and calls, search and
    filters, each step's context by part, durations, and whether the hash chain is
    intact. PATH may be a pipe, or - for standard input.

    Exit codes: 0 written; 1 written, but the transcript is damaged (the page shows it up
    to the damage and names the problem); 2 it cannot be read as a transcript, or the page
    cannot be written.
    """
    from mini_harness.replay.timeline import read_timeline
    from mini_harness.replay.view_page import render_page

    target = Path(output) if output is not None else default_output(path)
    if path != "-" and _same_file(target, Path(path)):
        raise BadUsage("the page would overwrite the transcript: give -o FILE.html")
    timeline = read_timeline(path)
    page = render_page(timeline)
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        error(f"cannot write {target}: {exc.strerror or exc}")
        raise click.exceptions.Exit(2) from None
    calls = sum(len(list(run.calls)) for run, _depth in timeline.walk())
    info(f"Wrote {target} ({calls:,} calls, {timeline.events:,} events)")
    for problem in timeline.problems:
        info(f"Problem: [{problem.kind}] {problem.describe()}")
    if open_page:
        import webbrowser

        if not webbrowser.open(target.resolve().as_uri()):
            error(f"no web browser could be started; open {target} yourself")
    if timeline.problems:
        error(f"{len(timeline.problems)} problem(s) in {timeline.path}")
        raise click.exceptions.Exit(1)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
