"""CLI pieces for the coding tools: `--accept-policy` and `replay --effects`.

`make_approver` gives a command the approval policy its `--approve` chose (the option is
`options.approve_option`), and `continued_approver` a resumed or forked run, checking that
policy against the one the run started with; `print_effects` is what `replay --effects`
prints.
"""

from __future__ import annotations

import os

import click

from mini_harness.agent.approval import (
    NOT_IN_A_RERUN,
    POLICY_FILE,
    ApprovalPolicy,
    PolicyApprover,
    load_policy,
    terminal_prompter,
)
from mini_harness.cli.options import F
from mini_harness.cli.output import echo, echo_json, warn
from mini_harness.errors import PolicyError, UsageError


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


def rerun_approver(policy: ApprovalPolicy) -> PolicyApprover:
    """An approver of `policy` for a re-run: it never asks anyone (`ask` is a denial)."""
    return PolicyApprover(policy, None, NOT_IN_A_RERUN)


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
    # The replay layer loads here, not with the approvers an agent run imports this for.
    from mini_harness.replay.history import fold_effects
    from mini_harness.replay.views.report import effects_json, effects_lines

    found = fold_effects(path)
    if as_json:
        echo_json(effects_json(*found))
        return
    for line in effects_lines(*found):
        echo(line)
