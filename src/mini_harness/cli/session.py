"""One agent session: the one place an agent run is assembled from the command line.

`run`, `resume`, `fork` and `replay --rerun --live-model` take the same options
(`agent_options`, `log_options`) and build their run from them here: the model provider,
the tools (the transcripts the run reads and writes out of their reach), the approver
(the workspace's policy with `--approve`, checked against the policy of the run being
continued), the log (with the log flags, redacting the provider's key), what is printed
(redacted as the log is), the `--json` document and the exit code.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Final

import attrs
import click
import orjson

from mini_harness.agent import (
    AgentConfig,
    AgentLoop,
    AgentOutcome,
    RequestLimits,
    choose_provider,
    provider_secrets,
)
from mini_harness.agent.approval import PolicyApprover
from mini_harness.cli.coding import approve_option, continued_approver, make_approver
from mini_harness.cli.log_options import LogSettings, opened_log
from mini_harness.cli.options import F, gathered, root_workspace, workspace_option
from mini_harness.cli.output import error, warn
from mini_harness.cli.printing import PrintingReporter
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.errors import ExitCode
from mini_harness.events import EventSink, JsonObject, JsonValue, to_wire
from mini_harness.replay.history import Run
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.tools import Workspace, WorkspaceLike
from mini_harness.transcripts import JsonlTranscript

STOP_REASONS: Final = {
    "final": ExitCode.OK,
    "max_steps": ExitCode.FAILED,
    "model_error": ExitCode.FAILED,
    "budget": ExitCode.FAILED,
    "cancelled": ExitCode.INTERRUPTED,
}
"""The exit code of an agent run, by how it stopped."""


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
    model_timeout: float | None = None
    model_retries: int | None = None


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
    click.option(
        "--model-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="How long each attempt of a model request may wait (default: "
        "MINI_HARNESS_MODEL_TIMEOUT, else 120).",
    ),
    click.option(
        "--model-retries",
        type=click.IntRange(min=0),
        metavar="N",
        help="How often a failed model request is tried again (default: "
        "MINI_HARNESS_MODEL_RETRIES, else 2).",
    ),
    click.option("--no-stream", is_flag=True, help="Print whole responses, not text as it comes."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document at the end."),
)
"""The options of `run`, `resume` and `fork`, given to the command as one AgentOptions
(`agent`); resume and fork add `--accept-policy` (`accept_policy_option`), gathered with
them."""


class AgentSession:
    """The pieces of one agent run, built from its options.

    The provider is chosen first (a model that cannot be used is a usage error before
    anything else happens); its keys are redacted from the log and from everything printed.
    """

    def __init__(self, options: AgentOptions, log_settings: LogSettings | None = None) -> None:
        self.options = options
        self.log_settings = log_settings or LogSettings()
        self.workspace = options.workspace or root_workspace()
        limits = RequestLimits(options.model_timeout, options.model_retries)
        self.provider = choose_provider(options.model, os.environ, limits)
        self.keys = provider_secrets(self.provider)
        self.printer = PrintingReporter(self.provider.name, self.log_settings.redactor(self.keys))
        self.bound: Workspace | None = None  # the built-in tools' workspace, once made
        self._inside: dict[str, str] = {}  # the run's transcripts inside it, until said

    @property
    def stream(self) -> bool:
        """Whether the model's text is printed as it comes."""
        return not self.options.no_stream and not self.options.as_json

    def tools(self, *transcripts: str | None) -> ToolRegistry:
        """The run's tools: `--registry`'s, else the built-in ones (the coding tools among
        them) in the workspace, the `transcripts` it reads and writes out of their reach
        for writing (by path now, and by identity once `log` opens them),
        `--redact-env`'s variables out of every command's environment."""
        workspace: WorkspaceLike | None = self.workspace
        if self.options.registry_spec is None:
            kept = tuple(path for path in transcripts if path is not None)
            workspace = self.bound = Workspace(self.workspace or os.curdir, protected=kept)
            inside = zip(kept, self.bound.protected, strict=True)
            self._inside = {real: path for path, real in inside if self.bound.contains(real)}
        return agent_tools(self.options.registry_spec, workspace, self.log_settings.redact_env)

    def approver(self, continuing: Run | None = None) -> PolicyApprover:
        """The workspace's approval policy with `--approve`; for a run `continuing` another,
        checked against the policy that one started with (`--accept-policy`)."""
        workspace = self.workspace or os.curdir
        if continuing is None:
            return make_approver(workspace, self.options.approve)
        return continued_approver(
            workspace,
            self.options.approve,
            continuing.run_id,
            continuing.policy_sha256,
            accept=self.options.accept_policy,
        )

    @contextlib.contextmanager
    def log(self, path: str | None) -> Iterator[EventSink]:
        """The run's log at `path` (None: nothing is recorded), written with the log flags;
        a log that cannot be opened is a usage error before anything runs. The tools'
        workspace protects the file opened by its identity too."""
        with opened_log(path, self.log_settings, self.keys) as sink:
            if self.bound is not None and isinstance(sink, JsonlTranscript):
                self.bound.pin(sink.path, sink.identity)
            yield sink

    def loop(
        self, sink: EventSink, tools: ToolRegistry, approver: PolicyApprover, config: AgentConfig
    ) -> AgentLoop:
        """The agent loop of the run, printing as it goes (unless `--json`). A transcript
        of the run inside the workspace is warned about here, once, as the run starts."""
        for inside in self._inside.values():
            warn(
                f"transcript {inside} lies inside the workspace the agent can write: a later "
                "run could rewrite it, and it would still verify. Keep the head hash that "
                f"`mini-harness transcript verify {inside}` prints somewhere else: "
                "`transcript verify --head HASH` is what proves it was not rewritten"
            )
        self._inside = {}
        runtime = ToolRuntime(tools, sink, approver=approver)
        reporter = None if self.options.as_json else self.printer
        return AgentLoop(runtime, self.provider, config, reporter)

    def say(self, message: str, *, cut: bool = False) -> None:
        """Print one line of the run's story (not with `--json`), redacted; `cut` to the
        width of the terminal (or COLUMNS)."""
        if self.options.as_json:
            return
        if cut:
            self.printer.line(message)
        else:
            self.printer.say(message)

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
        return STOP_REASONS[outcome.stop_reason]
