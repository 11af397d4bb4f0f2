"""One session: the one place a command that acts is assembled from the command line.

`run`, `resume`, `fork` and `replay --rerun --live-model` take the same options
(`agent_options`, `log_options`) and build their run from them here (`AgentSession`): the
model provider, the tools (the transcripts the run reads and writes out of their reach),
the approver (the workspace's policy with `--approve`, checked against the policy of the
run being continued), the log (with the log flags, redacting the provider's key), what is
printed (redacted as the log is), the `--json` document and the exit code. `undo` and
`mcp`, which run tools without a model, build theirs from the same parts (`Session`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import NoReturn

import attrs
import click
import orjson

from mini_harness.agent import (
    AgentConfig,
    AgentLoop,
    AgentOutcome,
    choose_provider,
    provider_secrets,
)
from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover
from mini_harness.cli.coding import (
    approve_option,
    continued_approver,
    make_approver,
    workspace_policy,
)
from mini_harness.cli.log_options import LogSettings, opened_log
from mini_harness.cli.options import (
    F,
    gathered,
    json_option,
    root_workspace,
    workspace_option,
)
from mini_harness.cli.output import error, fail
from mini_harness.cli.printing import PrintingReporter, RedactingPrinter
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.errors import ExitCode, exit_code_of
from mini_harness.events import EventSink, JsonObject, JsonValue, to_wire
from mini_harness.replay.history import Run
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.transcripts import Redactor


@attrs.frozen
class AgentOptions:
    """What every command that runs the agent is told: the model, the tools and where
    they work, how calls are approved, and how the run is printed."""

    model: str | None = None
    registry_spec: str | None = None
    workspace: str | None = None
    approve: str = "ask"
    accept_policy: bool = False
    no_stream: bool = False
    as_json: bool = False


def model_option(when: str = "") -> Callable[[F], F]:
    """The `--model PROVIDER:MODEL` option; `when` prefixes its help (replay's
    `With --live-model: `)."""
    return click.option(
        "--model",
        metavar="PROVIDER:MODEL",
        help=f"{when}mock, script:FILE, or a model provider (default: from the "
        "environment, else mock).",
    )


agent_options = gathered(
    AgentOptions,
    "agent",
    model_option(),
    registry_option(),
    workspace_option(
        "Root directory of the tools, of AGENTS.md and of .mini-harness/policy.toml "
        "(default: the one given before the subcommand, else the current directory)."
    ),
    approve_option,
    click.option("--no-stream", is_flag=True, help="Print whole responses, not text as it comes."),
    json_option("Print one JSON document at the end."),
)
"""The options of `run`, `resume` and `fork`, given to the command as one AgentOptions
(`agent`); resume and fork add `--accept-policy` (`accept_policy_option`), gathered with
them."""


class Session:
    """What every command that acts and records shares: its workspace (`--workspace`, else
    the root's), its log settings, the secrets it hides (`keys`, with what `--redact-env`
    and `--redact-pattern` name) from its log and from everything it prints, and how its
    calls are approved (the workspace's policy with `--approve`).

    `printer` prints its lines (on standard error with `err`: `mcp`'s standard output is
    the protocol's)."""

    def __init__(
        self,
        log_settings: LogSettings | None = None,
        *,
        workspace: str | None = None,
        approve: str = "ask",
        accept_policy: bool = False,
        keys: tuple[str, ...] = (),
        err: bool = False,
    ) -> None:
        self.log_settings = log_settings or LogSettings()
        self.workspace = workspace or root_workspace()
        self.approve = approve
        self.accept_policy = accept_policy
        self.keys = keys
        self.printer = self._printer(self.log_settings.redactor(keys), err=err)

    def _printer(self, redactor: Redactor | None, *, err: bool) -> RedactingPrinter:
        """What prints the command's lines, hiding what `redactor` hides."""
        return RedactingPrinter(redactor, err=err)

    def policy(self) -> ApprovalPolicy:
        """The workspace's approval policy with `--approve` (a usage error if it cannot be
        used)."""
        return workspace_policy(self.workspace or os.curdir, self.approve)

    def approver(self, continuing: Run | None = None) -> PolicyApprover:
        """The workspace's approval policy with `--approve`, asking on a terminal; for a
        run `continuing` another, checked against the policy that one started with
        (`--accept-policy`)."""
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

    def log(self, path: str | None) -> contextlib.AbstractContextManager[EventSink]:
        """The log at `path` (None: nothing is recorded), written with the log flags; a log
        that cannot be opened is a usage error before anything runs."""
        return opened_log(path, self.log_settings, self.keys)

    def say(self, message: str) -> None:
        """Print one line, redacted."""
        self.printer.say(message)

    def fail(self, message: str, code: ExitCode = ExitCode.FAILED) -> NoReturn:
        """Print one error line, redacted, and exit with `code`."""
        fail(self.printer.shown(message), code)


class AgentSession(Session):
    """The pieces of one agent run, built from its options.

    The provider is chosen first (a model that cannot be used is a usage error before
    anything else happens); its keys are redacted from the log and from everything printed.
    """

    printer: PrintingReporter

    def __init__(self, options: AgentOptions, log_settings: LogSettings | None = None) -> None:
        self.options = options
        self.provider = choose_provider(options.model, os.environ)
        super().__init__(
            log_settings,
            workspace=options.workspace,
            approve=options.approve,
            accept_policy=options.accept_policy,
            keys=provider_secrets(self.provider),
        )

    def _printer(self, redactor: Redactor | None, *, err: bool) -> PrintingReporter:
        """What prints the run as it goes (the model's text streamed, each step)."""
        return PrintingReporter(self.provider.name, redactor)

    @property
    def stream(self) -> bool:
        """Whether the model's text is printed as it comes."""
        return not self.options.no_stream and not self.options.as_json

    def tools(self, *transcripts: str | None) -> ToolRegistry:
        """The run's tools: `--registry`'s, else the built-in ones (the coding tools among
        them) in the workspace, the `transcripts` it reads and writes out of their reach
        for writing, `--redact-env`'s variables out of every command's environment."""
        return agent_tools(
            self.options.registry_spec,
            self.workspace,
            self.log_settings.redact_env,
            protected=transcripts,
        )

    def loop(
        self, sink: EventSink, tools: ToolRegistry, approver: PolicyApprover, config: AgentConfig
    ) -> AgentLoop:
        """The agent loop of the run, printing as it goes (unless `--json`)."""
        runtime = ToolRuntime(tools, sink, approver=approver)
        reporter = None if self.options.as_json else self.printer
        return AgentLoop(runtime, self.provider, config, reporter)

    def say(self, message: str) -> None:
        """Print one line of the run's story (not with `--json`), redacted."""
        if not self.options.as_json:
            super().say(message)

    def document(self, outcome: AgentOutcome, **origin: JsonValue) -> JsonObject:
        """The `--json` document of a run that ended; `origin` names the run it continues."""
        final = outcome.final_text
        return {
            "runId": outcome.run_id,
            **origin,
            "stopReason": outcome.stop_reason,
            "finalText": None if final is None else self.printer.shown(final),
            "steps": outcome.steps,
            "usage": to_wire(outcome.usage),
        }

    def finish(self, outcome: AgentOutcome, transcript: str | None, **origin: JsonValue) -> None:
        """Print how the run ended: the `--json` document, or where it was recorded."""
        if self.options.as_json:
            document = self.document(outcome, **origin)
            click.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())
        elif transcript is not None:
            self.printer.say(f"Transcript: {transcript} (run {outcome.run_id})")

    def exit_code(self, outcome: AgentOutcome) -> ExitCode:
        """Say why the run failed, if it did; the exit code of how it ended."""
        if outcome.error is not None:
            error(self.printer.shown(outcome.error))
        return exit_code_of(stop_reason=outcome.stop_reason)
