"""Finding a recorded run from the command line, and the workspace it worked in.

A Codex rollout or Claude Code session given as a transcript's path is imported into a
temporary transcript first (cli/importing.py), so every command that reads one reads it.

Wherever a command takes a transcript's path it also takes a run's id, or a prefix of it
(looked up in the session store, by the one rule of `--run`: ambiguous prefixes list their
candidates), and `resume`, `fork`, `show` and `view` take `--last`: the newest run of the
current workspace (or `--workspace`'s), by what the runs recorded. Commands that act on a
recorded run (`resume`, `fork`, `undo`, `replay --rerun`) work where it worked unless told
otherwise, and say so when that is not the current directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs
import click

from mini_harness.cli.options import F, root_workspace
from mini_harness.cli.output import aside, info
from mini_harness.cli.settings import session_store
from mini_harness.errors import GitError, ReplayError, UsageError, WorkspaceError
from mini_harness.events import RunWorkspace

if TYPE_CHECKING:
    from mini_harness.replay.history import Run
    from mini_harness.store import StoredRun

RUN_ID: Final = re.compile(r"[0-9a-f]{4,32}(?:-[0-9a-f]{0,12})?")
"""What may be a run's id or a prefix of one (4 hex digits at least), when it names no file."""


def last_option(what: str) -> Callable[[F], F]:
    """The `--last` flag: the newest `what` of the workspace, instead of PATH."""
    return click.option(
        "--last",
        is_flag=True,
        help=f"Instead of PATH: the newest {what} recorded in the session store for this "
        "workspace (the current directory, or --workspace).",
    )


@attrs.frozen
class Located:
    """A transcript's path, and the run an id or `--last` named in it (None: no run named);
    for another agent's session, imported into a temporary transcript, the session's file
    (`source`)."""

    path: str
    run_id: str | None = None
    source: str | None = None


def locate(
    given: str | None,
    *,
    last: bool = False,
    agent: bool = False,
    workspace: str | None = None,
) -> Located:
    """The transcript `given` names: a path as it is (`-`, or a file that exists), else the
    transcript of the stored run whose id starts with it. With `last`, the newest run that
    recorded `workspace` (default: the current directory), an agent run when `agent`."""
    if last:
        if given is not None:
            raise UsageError("give PATH or --last, not both")
        return _newest(workspace, agent=agent)
    if given is None:
        raise UsageError("give a transcript's PATH, a run's id, or --last")
    if given == "-" or os.path.lexists(given) or not RUN_ID.fullmatch(given):
        from mini_harness.cli.importing import foreign_transcript  # another agent's file

        imported = foreign_transcript(given)
        return Located(imported, source=given) if imported else Located(given)
    store = session_store()
    try:
        found = store.find_run(given)
    except ReplayError as exc:  # several runs' ids start with it
        raise UsageError(exc.message) from None
    if found is None:
        raise UsageError(
            f"cannot read transcript {given}: no such file, and no run recorded in the "
            f"session store ({store.root}) has an id starting with {given}"
        )
    return Located(str(found.path), found.run_id)


def _newest(workspace: str | None, *, agent: bool) -> Located:
    store = session_store()
    here = os.path.realpath(workspace or os.curdir)

    def wanted(stored: StoredRun) -> bool:
        return stored.run.is_agent or not agent

    found = store.last_run(here, wanted)
    if found is None:
        what = "agent run" if agent else "run"
        raise UsageError(
            f"no {what} of {here} is recorded in the session store ({store.root}); "
            "`mini-harness sessions --all` lists the runs of every workspace"
        )
    return Located(str(found.path), found.run_id)


def workspace_record(workspace: str) -> RunWorkspace:
    """`workspace` as RunStarted records it: its absolute path and, in a git repository,
    HEAD and the branch (read from the repository's files; never git)."""
    from mini_harness.tools import Workspace
    from mini_harness.tools.git_dir import repository_head

    path = os.path.realpath(workspace)
    try:
        head, branch = repository_head(Workspace(path))
    except (GitError, WorkspaceError, OSError):  # not a repository (of its own)
        return RunWorkspace(path)
    return RunWorkspace(path, head, branch)


def resume_words(run_id: str, transcript: str, store_root: str | os.PathLike[str]) -> list[str]:
    """The command that resumes run `run_id` of `transcript`: by the run's id when the
    transcript is in the session store at `store_root`, else by the transcript and the run."""
    in_store = os.path.realpath(transcript).startswith(os.path.realpath(store_root) + os.sep)
    return ["mini-harness", "resume", *([run_id] if in_store else [transcript, "--run", run_id])]


def notice(message: str, *, as_json: bool = False) -> None:
    """An informational line: on stdout, or on stderr when stdout holds a JSON document."""
    if as_json:
        aside(message)
    else:
        info(message)


def acting_workspace(given: str | None, run: Run | None, say: Callable[[str], None]) -> str | None:
    """Where a command that acts on `run` works: `given` (`--workspace`), else the
    root's `--workspace`, else where `run` worked (said by `say` when that is not the
    current directory); None: the current directory."""
    given = given or root_workspace()
    if given is not None or run is None:
        return given
    return _recorded_workspace(run, say)


def _recorded_workspace(run: Run, say: Callable[[str], None]) -> str | None:
    """The workspace `run` recorded, for a command that acts on it and was given none;
    said (by `say`) when it is not the current directory. None when the run recorded none
    (the current directory, as before). UsageError when it is not a directory any more."""
    recorded = run.workspace
    if recorded is None:
        return None
    if not os.path.isdir(recorded.path):
        raise UsageError(
            f"run {run.run_id} worked in {recorded.path}, which is not a directory any more "
            "(moved or deleted?): give the workspace with --workspace DIR"
        )
    here = os.path.realpath(os.curdir)
    if os.path.realpath(recorded.path) != here:
        say(
            f"Workspace: {recorded.path}, where run {run.run_id} worked (the current "
            f"directory is {here}; --workspace DIR to work elsewhere)"
        )
    return recorded.path
