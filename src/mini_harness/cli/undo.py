"""`mini-harness undo`: revert one apply_patch call of a transcript, as a new run.

Assembled as every command that acts (cli/acting.py): its settings, its workspace, its log
with the log flags, its tools (the built-in ones, the transcript out of their reach), and
what it prints, redacted as its log is.
"""

from __future__ import annotations

import os

import click

from mini_harness.cli.acting import Session
from mini_harness.cli.log_options import LogSettings, log_option, log_options
from mini_harness.cli.options import workspace_option
from mini_harness.cli.stored import acting_workspace, locate
from mini_harness.cli.verified import allow_unverified_option, verified_history
from mini_harness.errors import ToolCallError, UsageError, WorkspaceError
from mini_harness.events import CallOrigin, RunWorkspace
from mini_harness.replay.history import Call, Run, TranscriptFold
from mini_harness.runtime import ToolRuntime
from mini_harness.tools import Workspace
from mini_harness.tools.patch_undo import patch_reversal


def _find_call(path: str, call_id: str) -> tuple[Call, Run]:
    """The apply_patch call `call_id` of PATH that changed files, and the run that made it."""
    fold = TranscriptFold(path)
    for call in fold:
        if type(call) is Call and call.effects and call.call_id == call_id:
            if call.name != "apply_patch" or not isinstance(call.input, dict):
                raise UsageError(f"Call {call_id} is a {call.name} call; undo reverts apply_patch")
            fold.read()
            return call, fold.history.runs[call.run_index - 1]
    raise UsageError(f"No call {call_id} with recorded file effects in {path}")


@click.command("undo", short_help="Revert one apply_patch call of a transcript.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--call", "call_id", required=True, metavar="ID", help="The call to revert.")
@workspace_option(
    "The workspace the patch was applied in (default: the one given before the subcommand, "
    "else the one its run recorded, else the current directory)."
)
@log_option("appended to PATH as a new run")
@log_options
@allow_unverified_option
def undo_command(  # noqa: PLR0917 - click passes each option
    path: str,
    call_id: str,
    workspace: str | None,
    log: str | None,
    log_settings: LogSettings,
    allow_unverified: bool,
) -> None:
    """Revert the patch an apply_patch call applied, when every file it changed still has
    the sha256 the call left (else say which file moved on, and change nothing). PATH
    must verify: an edited record could name any file. PATH may be a run's id (or a prefix
    of it) recorded in the session store. The patch is reverted in the workspace its run
    recorded, unless --workspace says otherwise.

    Exit codes: 0 reverted; 1 a file moved on or the reversal failed; 2 usage errors.
    """
    path = locate(path).path
    unverified = verified_history(path, "undo", allow=allow_unverified)
    call, made_by = _find_call(path, call_id)
    # Where it reverts comes first: its settings are read there, as every command that
    # acts reads them where it acts (what it found is said once they protect the screen).
    said: list[str] = []
    root = os.path.realpath(acting_workspace(workspace, made_by, said.append) or os.curdir)
    session = Session(log_settings, workspace=root)
    for line in said:
        session.say(line)
    try:
        reverse = patch_reversal(Workspace(root), call.input["patch"], call.effects or ())
    except WorkspaceError as exc:
        session.fail(f"Cannot undo call {call_id}: {exc.message}; nothing was undone")
    registry = session.built_in_tools(path, log, root=root, commands=False)
    try:
        with session.log(log or path) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.start(
                unverified=unverified,
                workspace=RunWorkspace(root),
                undoes=CallOrigin(made_by.run_id, call_id),
            )
            result = runtime.dispatch("apply_patch", {"patch": reverse})
    except ToolCallError as exc:
        session.fail(f"Undo of call {call_id} failed: {exc.message}")
    session.say(f"Undid call {call_id} as call {result.call_id} of run {runtime.run_id}")
    for changed_file in result.output["files"]:
        session.say(f"  {changed_file['action']:<8} {changed_file['path']}")
