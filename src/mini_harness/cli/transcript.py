"""`mini-harness transcript verify|repair|keygen|sign|export`: check a transcript, fix what
a crash left, sign its head (cli/signing.py), and export its events as a flat table."""

from __future__ import annotations

import re
import shlex

import click

from mini_harness.cli.corpus import corpus_options, verify_corpus, wants_corpus
from mini_harness.cli.options import SingleOption, json_option
from mini_harness.cli.output import (
    PREFIX,
    echo,
    echo_json,
    error,
    fail,
    info,
    protect_configured_keys,
)
from mini_harness.cli.settings import session_store
from mini_harness.cli.signing import keygen_command, sign_command, trusted_keys
from mini_harness.cli.stored import locate, resume_words
from mini_harness.errors import UsageError, counted, exit_code_of
from mini_harness.transcripts.repair import repair_transcript
from mini_harness.transcripts.verify import VerifyReport, verify_transcript

_HASH = re.compile(r"[0-9a-f]{32}")


@click.group("transcript", invoke_without_command=True)
@click.pass_context
def transcript_group(ctx: click.Context) -> None:
    """Check and repair JSONL transcripts, and sign their heads.

    Exit codes: 0 clean; 1 problems found (or left after repair; a signed head refused);
    2 the file cannot be read as a transcript (missing, not a transcript, a newer format
    version, CRLF endings), or a key or note cannot be read.
    """
    protect_configured_keys()  # what a transcript holds is shown without any key
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
    signed = report.signed
    if signed is not None and signed.claim is not None:
        claim = signed.claim
        info(
            f"Signed head: {signed.note}: seq {claim.seq}, sha256 {claim.sha256}, signed "
            f"{claim.time} by {', '.join(signed.signers)}"
        )
        if not report.signed_head_problems():
            info(f"Signed head reached at line {report.signed_line}, the last line")
    for notice in report.notices():
        info(f"Note: {notice}")


def _problems(report: VerifyReport, what: str) -> None:
    problems = report.problems()
    for problem in problems:
        info(f"Problem: {problem}")
    if problems:
        code = exit_code_of(failed=True)
        fail(f"{counted(len(problems), 'problem')} {what} {report.path}", code)


@transcript_group.command("verify", short_help="Check a transcript; print its head hash.")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path())
@corpus_options
@json_option("Print the report as one JSON object.")
@click.option(
    "--head",
    metavar="HASH",
    help="The head hash kept from an earlier verify: fail unless the chain reaches it "
    "(a line was edited or the file was cut since).",
)
@click.option(
    "--vkey",
    "vkeys",
    metavar="VKEY",
    multiple=True,
    help="A verifier key you trust (NAME+ID+KEY, or a file of them, as keygen writes): "
    "PATH must end with the head signed in its note by one of them (repeatable).",
)
@click.option(
    "--allowed-signers",
    cls=SingleOption,
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="An OpenSSH allowed-signers file: the SSH signatures of the keys it lists count "
    "as trusted.",
)
@click.option(
    "--signed-head",
    cls=SingleOption,
    metavar="NOTE",
    type=click.Path(dir_okay=False),
    help="The note with the signed head (default: PATH.sig; in a corpus, each file's).",
)
def verify_command(  # noqa: PLR0917 - click passes each option
    paths: tuple[str, ...],
    workers: int | None,
    ray_address: str | None,
    as_json: bool,
    head: str | None,
    vkeys: tuple[str, ...],
    allowed_signers: str | None,
    signed_head: str | None,
) -> None:
    """Check PATH: every line is JSON, seq is dense, the prev chain is unbroken, every call
    ends exactly once, no call is in doubt. Prints the head hash (the last line's hash),
    which anchors the whole chain. PATH may be a pipe, or - for standard input.

    With --vkey or --allowed-signers, PATH must also end with the head signed in its note
    (PATH.sig, or --signed-head NOTE) by a key you trust: signatures by other keys are
    ignored, and a note no trusted key signed is refused.

    Several paths, a directory (every *.jsonl below it) or a glob make one report with a
    line per file; the exit code is the worst file's. A path may be a run's id (or a
    prefix of it) recorded in the session store."""
    paths = tuple(locate(path).path for path in paths)
    trusted = trusted_keys(vkeys, allowed_signers)
    if signed_head is not None and trusted is None:
        raise UsageError(
            "--signed-head needs --vkey VKEY or --allowed-signers FILE: a signature counts "
            "only with a key you trust"
        )
    if wants_corpus(paths, workers, ray_address):
        for flag, value in (("--head", head), ("--signed-head", signed_head)):
            if value is not None:
                raise UsageError(f"{flag} applies to one transcript, not to a corpus")
        verify_corpus(
            paths, as_json=as_json, workers=workers, ray_address=ray_address, trusted=trusted
        )
    (path,) = paths
    if head is not None and not _HASH.fullmatch(head):
        raise UsageError(f"--head must be a head hash (32 lowercase hex digits), not {head!r}")
    if trusted is None:
        report = verify_transcript(path, head=head)
    else:
        from mini_harness.transcripts.signing import note_path_for, open_signed_head

        if signed_head is None and path == "-":
            raise UsageError("standard input has no PATH.sig beside it: give --signed-head NOTE")
        note = signed_head or note_path_for(path)
        report = verify_transcript(path, head=head, signed=open_signed_head(note, trusted))
    if as_json:
        echo_json(report.to_json())
        raise click.exceptions.Exit(exit_code_of(failed=not report.ok))
    _summary(report)
    _problems(report, "found in")
    info("Verified: no problems found.")


transcript_group.add_command(keygen_command)
transcript_group.add_command(sign_command)


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
        fail(f"cannot repair {path}: {result.refused}", exit_code_of(failed=True))
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
        echo(
            f"{PREFIX} Use --close-in-doubt to record in-doubt calls and unfinished runs as "
            "interrupted (or `mini-harness resume` to continue a run)."
        )
    if report.empty and len(report.problems()) == 1:
        # What a crash while creating it leaves, once set aside: the next append starts it.
        info("The file is empty: the next append starts it with its TranscriptStarted line.")
        return
    _problems(report, "left in")
    info("Verified: no problems found.")


@transcript_group.command("export", short_help="Print the events as one flat table.")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["ndjson", "csv"]),
    default="ndjson",
    show_default=True,
    help="One JSON object per line, or CSV with a header row.",
)
def export_command(paths: tuple[str, ...], fmt: str) -> None:
    """Print every event of each PATH as one row with the same columns: file, line, seq,
    ts, type, runId, callId, name, step, errorKind, durationMs, and the whole event as
    JSON text in `event`. Every column holds one type (or null), so DuckDB, pandas and
    polars load the rows once told to read them all before typing the columns
    (docs/transcript-format.md gives the recipes).

    Exit codes: 0 every line exported; 1 a file has problems (its good lines are still
    exported); 2 a file cannot be read as a transcript.
    """
    import csv
    import sys

    from mini_harness.replay.history import read_problems
    from mini_harness.transcripts.reader import TranscriptReader
    from mini_harness.transcripts.rows import COLUMNS, event_rows

    writer = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n") if fmt == "csv" else None
    if writer is not None:
        writer.writeheader()
    kinds = []
    for path in paths:
        reader = TranscriptReader(path)
        for row in event_rows(reader):
            if writer is None:
                echo_json(row)
            else:
                writer.writerow(row)
        for problem in read_problems(reader):
            error(f"{path}: [{problem.kind}] {problem.describe()}")
            kinds.append(problem.kind)
    code = exit_code_of(problems=kinds)
    if code:
        raise click.exceptions.Exit(code)
