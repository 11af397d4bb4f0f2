"""`mini-harness sessions`: the runs recorded in the session store, and `sessions prune`."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from typing import TYPE_CHECKING

import click

from mini_harness.cli.options import SingleOption, json_option, root_workspace, workspace_option
from mini_harness.cli.output import echo, echo_json, info, warn
from mini_harness.cli.settings import session_store
from mini_harness.errors import UsageError, counted
from mini_harness.runtime.terminal import printable

if TYPE_CHECKING:
    from mini_harness.store import SessionStore, StoredRun

_DURATION = re.compile(r"(\d+)\s*([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def duration(text: str, option: str) -> dt.timedelta:
    """`90d`, `12h`, `30m`, `2w` as a timedelta; UsageError naming `option` otherwise."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise UsageError(
            f"{option} takes an age such as 30m, 12h, 90d or 2w (minutes, hours, days, "
            f"weeks), not {text!r}"
        )
    return dt.timedelta(**{_UNITS[match[2]]: int(match[1])})


def moment(text: str, option: str) -> dt.datetime:
    """When `--since WHEN` says: an age back from now (`7d`), or a date or a date and time
    (`2026-05-01`, `2026-05-01T09:00`; local time unless it gives its offset)."""
    if _DURATION.fullmatch(text.strip().lower()):
        return dt.datetime.now(dt.UTC) - duration(text, option)
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{option} takes an age (30m, 12h, 7d, 2w) or a date (2026-05-01, "
            f"2026-05-01T09:00), not {text!r}"
        ) from None
    return when if when.tzinfo is not None else when.astimezone()


def _home_relative(path: str | None) -> str:
    if path is None:
        return "(not recorded)"
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def _local(ts: str) -> str:
    when = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone()
    return f"{when:%Y-%m-%d %H:%M}"


_COLUMNS = ("RUN", "STARTED", "WORKSPACE", "TASK", "MODEL", "STEPS", "STOP", "TOKENS")


def table(runs: list[StoredRun], width: int) -> list[str]:
    """The runs as a table, one line each, the task cut to fit `width` columns."""
    rows = [
        (
            stored.run_id[:12],
            _local(stored.started),
            _home_relative(stored.workspace),
            " ".join(stored.run.task.split()) if stored.run.is_agent else "(tool run)",
            stored.model or "-",
            str(stored.steps),
            stored.stop_reason,
            "-" if stored.tokens is None else f"{stored.tokens:,}",
        )
        for stored in runs
    ]
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
    others = sum(widths) - widths[3] + 2 * (len(_COLUMNS) - 1)
    widths[3] = min(widths[3], max(12, width - others))
    lines = []
    for row in [_COLUMNS, *rows]:
        cells = list(row)
        if len(cells[3]) > widths[3]:
            cells[3] = cells[3][: widths[3] - 1] + "…"
        right = {5, 7}  # numbers
        padded = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        lines.append(printable("  ".join(padded).rstrip()))
    return lines


def _warn_unreadable(store: SessionStore) -> None:
    for entry in store.unreadable:
        warn(f"{entry.path} was not read: {entry.reason}")


@click.group(
    "sessions",
    invoke_without_command=True,
    short_help="List the runs recorded in the session store.",
)
@workspace_option("Only the runs of this workspace (default: the current directory).")
@click.option(
    "--since",
    cls=SingleOption,
    metavar="WHEN",
    help="Only runs started since WHEN: an age back from now (30m, 12h, 7d, 2w) or a date "
    "(2026-05-01, 2026-05-01T09:00, local time).",
)
@click.option("--all", "every", is_flag=True, help="The runs of every workspace.")
@json_option("Print the runs as one JSON array.")
@click.pass_context
def sessions_group(
    ctx: click.Context, workspace: str | None, since: str | None, every: bool, as_json: bool
) -> None:
    """List the runs recorded in the session store, newest first: id, when it started,
    its workspace, task, model, steps, how it stopped and the tokens it used.

    Runs are found by the workspace their RunStarted recorded: by default those of the
    current directory (or --workspace DIR), with --all those of every workspace. A run's
    id, or the first digits of it, works wherever a transcript's path does (`mini-harness
    resume 8706de89`, `show`, `view`, `fork`, `undo`, `replay`); `--last` takes the newest
    run of the workspace. The store holds transcripts like any other: `mini-harness replay
    DIR` over it is the corpus report. Nothing in it is deleted but by `sessions prune`.

    Exit codes: 0 listed (none, too); 2 bad options or a config file that cannot be used.
    """
    if ctx.invoked_subcommand is not None:
        if workspace or since or every or as_json:
            raise UsageError(
                f"the options of `sessions` do not apply to `{ctx.invoked_subcommand}`"
            )
        return
    if every and workspace:
        raise UsageError(
            "--all lists every workspace's runs: it cannot be combined with --workspace"
        )
    store = session_store()
    after = moment(since, "--since") if since is not None else None
    here = None if every else os.path.realpath(workspace or root_workspace() or os.curdir)
    runs = store.runs(workspace=here, since=after)
    _warn_unreadable(store)
    if as_json:
        echo_json([stored.to_json() for stored in runs])
        return
    whose = "every workspace" if here is None else here
    if not runs:
        hint = "" if every else "; --all lists every workspace's"
        info(f"No runs of {whose} recorded in {store.root}{hint}")
        return
    info(f"{counted(len(runs), 'run')} of {whose} in {store.root}, newest first")
    width = shutil.get_terminal_size((120, 24)).columns
    echo("\n".join(table(runs, width)))


@sessions_group.command("prune", short_help="Delete the sessions older than an age.")
@click.option(
    "--older-than",
    cls=SingleOption,
    required=True,
    metavar="AGE",
    help="Delete the sessions last written to more than AGE ago (30m, 12h, 90d, 2w).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
def prune_command(older_than: str, dry_run: bool) -> None:
    """Delete, from the session store, every session (a transcript, with the torn tails
    and the `view` page kept beside it) whose runs all started and ended more than AGE
    ago, and say each one deleted. A session whose run is still being written, or that
    cannot be read, is kept. Nothing else ever deletes a session.

    Exit codes: 0 done (nothing to delete, too); 2 bad options.
    """
    before = dt.datetime.now(dt.UTC) - duration(older_than, "--older-than")
    store = session_store()
    removed = store.prune(before, dry_run=dry_run)
    _warn_unreadable(store)
    verb = "Would delete" if dry_run else "Deleted"
    for pruned in removed:
        extra = "".join(f" and {each.name}" for each in pruned.beside)
        info(
            f"{verb} {pruned.path}{extra} ({counted(pruned.runs, 'run')}, last written "
            f"{_local(pruned.last)})"
        )
    cutoff = f"{before.astimezone():%Y-%m-%d %H:%M}"
    if not removed:
        info(f"Nothing to delete: no session in {store.root} was last written before {cutoff}")
        return
    done = "would be deleted" if dry_run else "deleted"
    info(
        f"{counted(len(removed), 'session')} last written before {cutoff} {done} from {store.root}"
    )
