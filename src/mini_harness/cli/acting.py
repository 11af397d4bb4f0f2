"""What every command that acts and records shares (`Session`): a one-shot `--tool`
dispatch, `mcp` and `undo` as they are, and every agent run (cli/session.py's
AgentSession builds on it).

Its settings (the flags over the environment over the project's and the user's
config.toml: cli/settings.py), its workspace, how its calls are approved, its log with the
log flags, and the secrets it hides: the chosen model provider's keys and every configured
provider's, `--redact-env` (the config's names too) and `--redact-pattern`, from its log
and from everything it prints (cli/output.py holds the command's one Redactor).

This module loads what a dispatch needs, no more: the approval policy and the agent's
loop load where they are used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from mini_harness.cli.log_options import LogSettings, opened_log
from mini_harness.cli.options import root_workspace
from mini_harness.cli.output import fail, info, protect, warn
from mini_harness.errors import ExitCode, UsageError, WorkspaceError
from mini_harness.events import EventSink

if TYPE_CHECKING:
    from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover
    from mini_harness.cli.settings import Settings
    from mini_harness.replay.history import Run
    from mini_harness.runtime import ToolRegistry
    from mini_harness.tools import Workspace
    from mini_harness.transcripts import Redactor


class Session:
    """What every command that acts and records shares: its settings, its workspace
    (`--workspace`, else the root's), its log settings, the secrets it hides (`keys`, with
    what `--redact-env` and `--redact-pattern` name, and the config's) from its log and
    from everything it prints, and how its calls are approved (the workspace's policy with
    the approval mode: `approve` as given, else the settings').

    The settings are read first (a config file that cannot be used is a usage error), and
    a project's value not taken is warned about. `err`: what it says goes to standard
    error (`mcp`'s standard output is the protocol's). `flags` are the command's other
    settings as given (by key: `model`, `max-steps`, ...)."""

    def __init__(
        self,
        log_settings: LogSettings | None = None,
        *,
        workspace: str | None = None,
        approve: str | None = None,
        accept_policy: bool = False,
        err: bool = False,
        flags: Mapping[str, Any] | None = None,
    ) -> None:
        from mini_harness.cli.settings import load_settings
        from mini_harness.events.redaction import configured_keys

        given = log_settings or LogSettings()
        self.workspace = workspace or root_workspace()
        self.settings: Settings = load_settings(
            self.workspace,
            {
                "approve": approve,
                "redact-env": given.redact_env,
                "redact-pattern": given.redact_pattern,
                **(flags or {}),
            },
        )
        for passed in self.settings.passed:
            warn(passed.describe())
        # Names from a config file are redacted where they are set: a config serves every
        # shell, and a variable this one does not set has nothing to hide.
        names = [
            name
            for name in self.settings["redact-env"]
            if name in given.redact_env or os.environ.get(name)
        ]
        self.log_settings = attrs.evolve(
            given, redact_env=names, redact_pattern=self.settings["redact-pattern"]
        )
        self.approve: str = self.settings["approve"]
        self.accept_policy = accept_policy
        self._err = err
        self.bound: Workspace | None = None  # the built-in tools' workspace, once made
        # The chosen provider's keys, and those of every provider configured.
        self.keys = tuple(dict.fromkeys((*self._provider_keys(), *configured_keys(os.environ))))
        self.redactor: Redactor | None = self.log_settings.redactor(self.keys)
        protect(self.redactor)  # nor anything else it prints

    def _provider_keys(self) -> tuple[str, ...]:
        """The keys of the model provider the command uses (none: it uses none)."""
        return ()

    def new_transcript(self, run_id: str) -> str:
        """A new transcript in the session store (where the settings put it), for a new
        session whose first run is `run_id` (a run without --log, a dispatch with --record)."""
        from mini_harness.store import SessionStore

        return str(SessionStore(self.settings.sessions_dir).new_transcript(run_id))

    def policy(self) -> ApprovalPolicy:
        """The workspace's approval policy with the approval mode (a usage error if it
        cannot be used)."""
        from mini_harness.cli.coding import workspace_policy

        return workspace_policy(self.workspace or os.curdir, self.approve)

    def approver(self, continuing: Run | None = None) -> PolicyApprover:
        """The workspace's approval policy with the approval mode, asking on a terminal;
        for a run `continuing` another, checked against the policy that one started with
        (`--accept-policy`)."""
        from mini_harness.cli.coding import continued_approver, make_approver

        workspace = self.workspace or os.curdir
        if continuing is None:
            return make_approver(workspace, self.approve)
        return continued_approver(
            workspace,
            self.approve,
            continuing.run_id,
            continuing.policy_sha256,
            accept=self.accept_policy,
        )

    def built_in_tools(
        self, *transcripts: str | None, root: str | None = None, commands: bool = True
    ) -> ToolRegistry:
        """The built-in tools (the coding tools among them) in `root` (default: the
        workspace), the `transcripts` the command reads and writes out of their reach for
        writing, `--redact-env`'s variables out of every command's environment, in
        bubblewrap when the settings require it; without `commands` (a command that runs
        none of run_command's: undo), bubblewrap is not looked for."""
        from mini_harness.cli.registry_spec import agent_registry
        from mini_harness.tools import Workspace

        kept = tuple(path for path in transcripts if path is not None)
        bound = self.bound = Workspace(root or self.workspace or os.curdir, protected=kept)
        redacted = self.log_settings.redact_env
        if not commands:
            return agent_registry(bound, redacted, sandbox=False)
        return self.sandboxed(lambda sandbox: agent_registry(bound, redacted, sandbox))

    def sandboxed(self, make: Callable[[bool | None], ToolRegistry]) -> ToolRegistry:
        """The tools `make` makes, told to require bubblewrap when the settings do
        (`require-sandbox`: a usage error naming where it is set when it cannot be had)."""
        required = self.settings["require-sandbox"]
        try:
            return make(True if required else None)
        except WorkspaceError as exc:
            if not required:
                raise
            source = self.settings.source("require-sandbox")
            raise UsageError(f"{exc.message} (require-sandbox is set by {source})") from None

    def log(
        self, path: str | None, say: Callable[[str], None] | None = None
    ) -> contextlib.AbstractContextManager[EventSink]:
        """The log at `path` (None: nothing is recorded), written with the log flags (its
        head signed when the command ends, with `--sign-with`, which `say` tells: by default
        a line of the command's); a log that cannot be opened is a usage error before
        anything runs."""
        return opened_log(path, self.log_settings, self.keys, say or self.say)

    def say(self, message: str) -> None:
        """Print one line (on standard error with `err`), redacted."""
        info(message, err=self._err)

    def fail(self, message: str, code: ExitCode = ExitCode.FAILED) -> NoReturn:
        """Print one error line, redacted, and exit with `code`."""
        fail(message, code)
