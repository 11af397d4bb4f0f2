"""`mini-harness transcript verify|repair`: check a transcript, and fix what a crash left."""

from __future__ import annotations

import re
import shlex

import click
import orjson

from mini_harness.cli.corpus import corpus_options, verify_corpus, wants_corpus
from mini_harness.cli.output import PREFIX, error, fail, info
from mini_harness.cli.settings import session_store
from mini_harness.cli.stored import locate, resume_words
from mini_harness.errors import ExitCode, UsageError, counted
from mini_harness.transcripts.repair import repair_transcript
from mini_harness.transcripts.verify import VerifyReport, verify_transcript

_HASH = re.compile(r"[0-9a-f]{32}")


@click.group("transcript", invoke_without_command=True)
@click.pass_context
def transcript_group(ctx: click.Context) -> None:
    """Check and repair JSONL transcripts.

    Exit codes: 0 clean; 1 problems found (or left after repair); 2 the file cannot be read
    as a transcript (missing, not a transcript, a newer format version, CRLF endings).
    """
    # Asking for nothing is asking for help, as with the root command (not a usage error).
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _summary(report: VerifyReport) -> None:
    info(f"Transcript: {report.path}")
    if report.transcript_id is not None:
        info(f"Format version {report.version}, transcript id {report.transcript_id}")
    seqs = "" if report.last_seq is None else f" (last seq {report.last_seq})"
    info(f"Lines: {report.lines}{seqs}, runs: {report.runs}, calls: {report.calls}")
    info(f"Head hash: {report.head_hash or '(none)'}")
    if report.expected_head is not None and report.head_line is not None:
        info(f"Expected head {report.expected_head} reached at line {report.head_line}")
    for notice in report.notices():
        info(f"Note: {notice}")


def _problems(report: VerifyReport, what: str) -> None:
    problems = report.problems()
    for problem in problems:
        info(f"Problem: {problem}")
    if problems:
        fail(f"{counted(len(problems), 'problem')} {what} {report.path}", ExitCode.FAILED)


@transcript_group.command("verify", short_help="Check a transcript; print its head hash.")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@corpus_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--head",
    metavar="HASH",
    help="The head hash kept from an earlier verify: fail unless the chain reaches it "
    "(a line was edited or the file was cut since).",
)
def verify_command(
    paths: tuple[str, ...],
    workers: int | None,
    ray_address: str | None,
    as_json: bool,
    head: str | None,
) -> None:
    """Check PATH: every line is JSON, seq is dense, the prev chain is unbroken, every call
    ends exactly once, no call is in doubt. Prints the head hash (the last line's hash),
    which anchors the whole chain. PATH may be a pipe, or - for standard input.

    Several paths, a directory (every *.jsonl below it) or a glob make one report with a
    line per file; the exit code is the worst file's. A path may be a run's id (or a
    prefix of it) recorded in the session store."""
    paths = tuple(locate(path).path for path in paths)
    if wants_corpus(paths, workers, ray_address):
        if head is not None:
            raise UsageError("--head applies to one transcript, not to a corpus")
        verify_corpus(paths, as_json=as_json, workers=workers, ray_address=ray_address)
    (path,) = paths
    if head is not None and not _HASH.fullmatch(head):
        raise UsageError(f"--head must be a head hash (32 lowercase hex digits), not {head!r}")
    report = verify_transcript(path, head=head)
    if as_json:
        click.echo(orjson.dumps(report.to_json()).decode())
        raise click.exceptions.Exit(ExitCode.OK if report.ok else ExitCode.FAILED)
    _summary(report)
    _problems(report, "found in")
    info("Verified: no problems found.")


@transcript_group.command(
    "repair", short_help="Set a torn tail aside; close in-doubt calls and runs as interrupted."
)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--close-in-doubt",
    is_flag=True,
    help="Append ToolFailed{kind: interrupted} for every call without a terminal event, and "
    "RunFinished{stopReason: interrupted} for every agent run without one. Only when no "
    "process is still writing the transcript.",
)
def repair_command(path: str, close_in_doubt: bool) -> None:
    """Copy a torn tail of PATH aside (PATH.torn-OFFSET) and cut it off, and with
    --close-in-doubt record in-doubt calls as interrupted. Never deletes data it has not
    copied aside; never rewrites the middle of a transcript. PATH may be a run's id (or a
    prefix of it) recorded in the session store."""
    path = locate(path).path
    result = repair_transcript(path, close_in_doubt=close_in_doubt)
    if result.refused is not None:
        error(f"cannot repair {path}: {result.refused}")
        raise click.exceptions.Exit(ExitCode.FAILED)
    for torn in result.quarantined:
        info(
            f"Torn tail: {torn.length} {'byte' if torn.length == 1 else 'bytes'} at byte "
            f"{torn.offset} copied to {torn.path} "
            "and cut off"
        )
    for call in result.closed:
        info(f"Closed in-doubt call {call.call_id} ({call.name}) as interrupted")
    for run in result.ended:
        command = shlex.join(resume_words(run.run_id, path, session_store().root))
        info(f"Closed unfinished run {run.run_id} as interrupted; to continue it: {command}")
    if not result.quarantined and not result.closed and not result.ended:
        info("Nothing to repair.")
    report = result.after
    _summary(report)
    if (report.in_doubt or report.unfinished_runs) and not close_in_doubt:
        click.echo(
            f"{PREFIX} Use --close-in-doubt to record in-doubt calls and unfinished runs as "
            "interrupted (or `mini-harness resume` to continue a run)."
        )
    if report.empty and len(report.problems()) == 1:
        # What a crash while creating it leaves, once set aside: the next append starts it.
        info("The file is empty: the next append starts it with its TranscriptStarted line.")
        return
    _problems(report, "left in")
    info("Verified: no problems found.")
