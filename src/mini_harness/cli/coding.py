"""CLI pieces for the coding tools: `--approve`, `replay --effects`, and `undo`.

`approve_option` and `make_approver` give a command the approval policy (and
`continued_approver` a resumed or forked run, checking that policy against the one the run
started with); `print_effects` is what `replay --effects` prints; `undo_command` reverts
one applied patch.
"""

from __future__ import annotations

import os

import click
import orjson

from mini_harness.agent.approval import (
    POLICY_FILE,
    ApprovalPolicy,
    PolicyApprover,
    load_policy,
    terminal_prompter,
)
from mini_harness.cli.log_options import LogSettings, log_option, log_options, opened_log
from mini_harness.cli.options import F, workspace_option
from mini_harness.cli.output import fail, warn
from mini_harness.cli.printing import RedactingPrinter
from mini_harness.cli.stored import locate, recorded_workspace
from mini_harness.cli.verified import allow_unverified_option, verified_history
from mini_harness.errors import ExitCode, PolicyError, ToolCallError, UsageError, WorkspaceError
from mini_harness.events import RunWorkspace
from mini_harness.replay.history import Call, Run, TranscriptFold, fold_effects
from mini_harness.replay.views.report import effects_json, effects_lines
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.runtime.terminal import printable
from mini_harness.tools import Workspace, register_coding_tools
from mini_harness.tools.patch_undo import patch_reversal


def workspace_policy(workspace: str | os.PathLike[str], approve: str) -> ApprovalPolicy:
    """The workspace's policy file with the --approve mode; a policy file that cannot be
    used is a usage error (exit 2)."""
    try:
        return load_policy(workspace, approve)
    except PolicyError as exc:
        raise UsageError(exc.message) from None


def make_approver(workspace: str | os.PathLike[str], approve: str) -> PolicyApprover:
    """The workspace's policy with the --approve mode, prompting on stdin/stderr when both
    are terminals."""
    return PolicyApprover(workspace_policy(workspace, approve), terminal_prompter())


def accept_policy_option(func: F) -> F:
    """The `--accept-policy` flag of resume and fork, passed as `accept_policy`."""
    return click.option(
        "--accept-policy",
        is_flag=True,
        help=f"Continue under the current {POLICY_FILE} when it differs from the one the "
        "run started with (without it, such a run is not continued).",
    )(func)


def continued_approver(
    workspace: str | os.PathLike[str],
    approve: str,
    run_id: str,
    started_with: str | None,
    *,
    accept: bool,
) -> PolicyApprover:
    """The approver of a run that continues run `run_id`, which started under the policy
    file with sha256 `started_with` (None: not recorded).

    A policy file that changed since may have been changed by that run's model: without
    `accept` (--accept-policy) it is a usage error naming both hashes, before anything is
    written; with it, the current file is the policy, and the new run's RunStarted records
    its hash beside the old run's.
    """
    approver = make_approver(workspace, approve)
    now = approver.policy_sha256
    if started_with is None:
        warn(f"run {run_id} recorded no policy hash; continuing under the current {POLICY_FILE}")
    elif now != started_with:
        changed = (
            f"{POLICY_FILE} changed since run {run_id} started "
            f"(sha256 {started_with[:12]} then, {str(now)[:12]} now)"
        )
        if not accept:
            raise UsageError(
                f"{changed}: the run's own calls may have changed it. Read it, then pass "
                "--accept-policy to continue under it as it is now"
            )
        warn(f"{changed}; continuing under it as it is now (--accept-policy)")
    return approver


def print_effects(path: str, *, as_json: bool = False) -> None:
    """Print the --effects report of a transcript: lines, or one JSON document."""
    found = fold_effects(path)
    if as_json:
        click.echo(orjson.dumps(effects_json(*found)).decode())
        return
    for line in effects_lines(*found):
        click.echo(printable(line))


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
    "The workspace the patch was applied in (default: the one its run recorded, else the "
    "current directory)."
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
    printer = RedactingPrinter(log_settings.redactor())
    path = locate(path).path
    if not os.path.isfile(path):
        raise UsageError(f"cannot read transcript {path}: no such file")
    unverified = verified_history(path, "undo", allow=allow_unverified)
    call, made_by = _find_call(path, call_id)
    root = os.path.realpath(workspace or recorded_workspace(made_by, printer.say) or os.curdir)
    try:
        reverse = patch_reversal(Workspace(root), call.input["patch"], call.effects or ())
    except WorkspaceError as exc:
        fail(f"Cannot undo call {call_id}: {exc.message}; nothing was undone", ExitCode.FAILED)
    registry = ToolRegistry()
    register_coding_tools(registry, root, sandbox=False)
    try:
        with opened_log(log or path, log_settings) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.start(unverified=unverified, workspace=RunWorkspace(root))
            result = runtime.dispatch("apply_patch", {"patch": reverse})
    except ToolCallError as exc:
        fail(f"Undo of call {call_id} failed: {exc.message}", ExitCode.FAILED)
    printer.say(f"Undid call {call_id} as call {result.call_id} of run {runtime.run_id}")
    for changed_file in result.output["files"]:
        printer.say(f"  {changed_file['action']:<8} {changed_file['path']}")
