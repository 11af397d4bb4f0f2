"""One session: the one place a command that acts is assembled from the command line.

`run`, `resume`, `fork` and `replay --rerun --live-model` take the same options
(`agent_options`, `log_options`) and build their run from them here: the settings (flags
over the environment over the project's and the user's config.toml: cli/settings.py), the
model provider, the tools (the transcripts the run reads and writes out of their reach),
the approver (the workspace's policy with the approval mode, checked against the policy of
the run being continued), the log (`--log`, else a new transcript in the session store;
with the log flags, redacting the provider's key), what RunStarted records of the
workspace and the settings, what is printed (redacted as the log is), the `--json`
document and the exit code (`AgentSession`). `undo` and `mcp`, which run tools without a
model, are built from the same parts (`Session`): the workspace, the approval policy, the
log with the log flags, and what they print, redacted as their log is.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
import click
import orjson

from mini_harness.agent import (
    AgentConfig,
    AgentLoop,
    AgentOutcome,
    RequestLimits,
    choose_provider,
    configured_keys,
    provider_secrets,
)
from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover
from mini_harness.cli.coding import continued_approver, make_approver, workspace_policy
from mini_harness.cli.export import live_export, otel_option
from mini_harness.cli.log_options import LogSettings, opened_log
from mini_harness.cli.options import (
    APPROVE_HELP,
    F,
    approve_option,
    gathered,
    json_option,
    root_workspace,
    workspace_option,
)
from mini_harness.cli.output import aside, echo_json, error, fail, info, protect, warn
from mini_harness.cli.printing import PrintingReporter, RedactingPrinter
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.cli.settings import load_settings
from mini_harness.cli.stored import resume_words, session_transcript, workspace_record
from mini_harness.errors import ExitCode, UsageError, WorkspaceError, exit_code_of
from mini_harness.events import (
    EventSink,
    JsonObject,
    JsonValue,
    RunSettings,
    RunWorkspace,
    new_id,
    to_wire,
)
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.store import SessionStore
from mini_harness.tools import Workspace, WorkspaceLike
from mini_harness.transcripts import JsonlTranscript, Redactor

if TYPE_CHECKING:
    from mini_harness.export.live import LiveExport
    from mini_harness.replay.history import Run


@attrs.frozen
class AgentOptions:
    """What every command that runs the agent is told: the model, the tools and where
    they work, how calls are approved, and how the run is printed."""

    model: str | None = None
    registry_spec: str | None = None
    workspace: str | None = None
    approve: str | None = None  # None: the settings' (default ask)
    accept_policy: bool = False
    no_stream: bool = False
    as_json: bool = False
    otel: bool = False
    model_timeout: float | None = None
    model_retries: int | None = None


def model_option(when: str = "") -> Callable[[F], F]:
    """The `--model PROVIDER:MODEL` option; `when` prefixes its help (replay's
    `With --live-model: `)."""
    return click.option(
        "--model",
        metavar="PROVIDER:MODEL",
        help=f"{when}mock, script:FILE, or a model provider (default: the config's model, "
        "else the one whose API key is set, else mock).",
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
    functools.partial(
        approve_option,
        default=None,
        help_text=f"{APPROVE_HELP} Default: the config's approve, else ask.",
    ),
    click.option(
        "--model-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="How long each attempt of a model request may wait (default: the config's "
        "model-timeout, else 120).",
    ),
    click.option(
        "--model-retries",
        type=click.IntRange(min=0),
        metavar="N",
        help="How often a failed model request is tried again (default: the config's "
        "model-retries, else 2).",
    ),
    click.option("--no-stream", is_flag=True, help="Print whole responses, not text as it comes."),
    json_option("Print one JSON document at the end."),
    otel_option,
)
"""The options of `run`, `resume` and `fork`, given to the command as one AgentOptions
(`agent`); resume and fork add `--accept-policy` (`accept_policy_option`), gathered with
them."""


class Session:
    """What every command that acts and records shares: its workspace (`--workspace`, else
    the root's), its log settings, the secrets it hides (`keys`, with what `--redact-env`
    and `--redact-pattern` name) from its log and from everything it prints, and how its
    calls are approved (the workspace's policy with the approval mode `approve`).

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
        protect(keys)  # nor anything else it prints
        self.printer = self._printer(self.log_settings.redactor(keys), err=err)

    def _printer(self, redactor: Redactor | None, *, err: bool) -> RedactingPrinter:
        """What prints the command's lines, hiding what `redactor` hides."""
        return RedactingPrinter(redactor, err=err)

    def policy(self) -> ApprovalPolicy:
        """The workspace's approval policy with the approval mode (a usage error if it
        cannot be used)."""
        return workspace_policy(self.workspace or os.curdir, self.approve)

    def approver(self, continuing: Run | None = None) -> PolicyApprover:
        """The workspace's approval policy with the approval mode, asking on a terminal;
        for a run `continuing` another, checked against the policy that one started with
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

    def log(
        self, path: str | None, say: Callable[[str], None] | None = None
    ) -> contextlib.AbstractContextManager[EventSink]:
        """The log at `path` (None: nothing is recorded), written with the log flags (its
        head signed when the command ends, with `--sign-with`, which `say` tells: by default
        a line of the command's, redacted); a log that cannot be opened is a usage error
        before anything runs."""
        return opened_log(path, self.log_settings, self.keys, say or self.printer.say)

    def say(self, message: str) -> None:
        """Print one line, redacted."""
        self.printer.say(message)

    def fail(self, message: str, code: ExitCode = ExitCode.FAILED) -> NoReturn:
        """Print one error line, redacted, and exit with `code`."""
        fail(self.printer.shown(message), code)


class AgentSession(Session):
    """The pieces of one agent run, built from its options.

    The settings are read first (the flags over the environment over the workspace's
    `.mini-harness/config.toml` over the user's config.toml: a config file that cannot be
    used is a usage error), then the provider is chosen (so is a model that cannot be
    used), before anything else happens; its keys are redacted from the log and from
    everything printed.
    """

    printer: PrintingReporter

    def __init__(
        self,
        options: AgentOptions,
        log_settings: LogSettings | None = None,
        *,
        workspace: str | None = None,
        flags: Mapping[str, Any] | None = None,
    ) -> None:
        """`workspace` overrides the options' (a continued run's recorded one); `flags`
        are the command's other settings as given (`max-steps`, `max-context-tokens`)."""
        self.options = options
        workspace = workspace or options.workspace or root_workspace()
        given = log_settings or LogSettings()
        self.settings = load_settings(
            workspace,
            {
                "model": options.model,
                "approve": options.approve,
                "redact-env": given.redact_env,
                "redact-pattern": given.redact_pattern,
                "model-timeout": options.model_timeout,
                "model-retries": options.model_retries,
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
        settled = attrs.evolve(
            given, redact_env=names, redact_pattern=self.settings["redact-pattern"]
        )
        limits = RequestLimits(self.settings["model-timeout"], self.settings["model-retries"])
        self.provider = choose_provider(self.settings["model"], os.environ, limits)
        super().__init__(
            settled,
            workspace=workspace,
            approve=self.settings["approve"],
            accept_policy=options.accept_policy,
            # The chosen provider's keys, and those of every provider configured.
            keys=tuple(
                dict.fromkeys((*provider_secrets(self.provider), *configured_keys(os.environ)))
            ),
        )
        self.run_id = new_id()
        self.bound: Workspace | None = None  # the built-in tools' workspace, once made
        self._inside: dict[str, str] = {}  # the run's transcripts inside it, until said
        self._transcript: JsonlTranscript | None = None
        self._live: LiveExport | None = None

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
        for writing (by path now, and by identity once `log` opens them),
        `--redact-env`'s variables out of every command's environment."""
        required = self.settings["require-sandbox"]
        spec = self.options.registry_spec
        # --registry's tools work where they like: a workspace only goes with them when
        # given (an error), not when it was recorded.
        workspace: WorkspaceLike | None = (
            self.workspace if spec is None else self.options.workspace or root_workspace()
        )
        if spec is None:
            kept = tuple(path for path in transcripts if path is not None)
            workspace = self.bound = Workspace(self.workspace or os.curdir, protected=kept)
            inside = zip(kept, self.bound.protected, strict=True)
            self._inside = {real: path for path, real in inside if self.bound.contains(real)}
        try:
            return agent_tools(
                spec,
                workspace,
                self.log_settings.redact_env,
                sandbox=True if required else None,
            )
        except WorkspaceError as exc:
            if not required:
                raise
            source = self.settings.source("require-sandbox")
            raise UsageError(f"{exc.message} (require-sandbox is set by {source})") from None

    def transcript(self, log: str | None, *, no_log: bool = False) -> str | None:
        """Where a new run is recorded: `--log`, else a new transcript in the session store
        named by the run; None with `--no-log` (said once)."""
        if no_log:
            if log is not None:
                raise UsageError("--no-log cannot be combined with --log")
            if self.log_settings.sign_with:
                raise UsageError("--sign-with cannot be combined with --no-log: nothing is signed")
            self.say("Not recorded (--no-log): this run cannot be resumed or found again")
            return None
        if log is not None:
            return log
        return session_transcript(SessionStore(self.settings.sessions_dir), self.run_id)

    @contextlib.contextmanager
    def log(
        self, path: str | None, say: Callable[[str], None] | None = None
    ) -> Iterator[EventSink]:
        """The run's log at `path` (None: nothing is recorded), written with the log flags
        (its head signed when the run ends, with `--sign-with`, said on stderr with
        `--json`); a log that cannot be opened is a usage error before anything runs. The
        tools' workspace protects the file opened by its identity too. While it is open,
        the run is exported live when asked (`--otel`), closed with it."""
        shown = self.printer.shown
        if say is None and self.options.as_json:
            say = lambda message: aside(shown(message))  # noqa: E731 - one line, here only
        with super().log(path, say) as sink:
            if self.bound is not None and isinstance(sink, JsonlTranscript):
                self.bound.pin(sink.path, sink.identity)
            self._transcript = sink if isinstance(sink, JsonlTranscript) else None
            self._live = live_export(self.options.otel, self.log_settings.redactor(self.keys))
            try:
                yield sink
            finally:
                if self._live is not None:
                    self._live.close()

    def run_workspace(self) -> RunWorkspace:
        """The workspace as RunStarted records it (`workspace_record`)."""
        return workspace_record(self.workspace or os.curdir)

    def loop(
        self, sink: EventSink, tools: ToolRegistry, approver: PolicyApprover, config: AgentConfig
    ) -> AgentLoop:
        """The agent loop of the run, printing as it goes (unless `--json`); its RunStarted
        records the workspace and the settings. A transcript of the run inside the
        workspace is warned about here, once, as the run starts."""
        for inside in self._inside.values():
            warn(
                f"transcript {inside} lies inside the workspace the agent can write: a later "
                "run could rewrite it, and it would still verify. Keep the head hash that "
                f"`mini-harness transcript verify {inside}` prints somewhere else: "
                "`transcript verify --head HASH` is what proves it was not rewritten"
            )
        self._inside = {}
        if self._live is not None:
            sink = self._live.wrap(sink, self._transcript)
        runtime = ToolRuntime(tools, sink, approver=approver, run_id=self.run_id)
        reporter = None if self.options.as_json else self.printer
        settings = RunSettings(
            self.approve, config.max_context_tokens, bool(self.settings["require-sandbox"])
        )
        config = attrs.evolve(config, workspace=self.run_workspace(), settings=settings)
        return AgentLoop(runtime, self.provider, config, reporter)

    def say(self, message: str, *, cut: bool = False) -> None:
        """Print one line of the run's story (not with `--json`), redacted; `cut` to the
        width of the terminal (or COLUMNS)."""
        if self.options.as_json:
            return
        if cut:
            self.printer.line(message)
        else:
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
            echo_json(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())
        elif transcript is not None:
            if outcome.stop_reason == "cancelled" and sys.stdout.isatty():
                click.echo("")  # the terminal echoed ^C where the cursor was
            self.printer.say(f"Transcript: {transcript} (run {outcome.run_id})")

    def exit_code(self, outcome: AgentOutcome, transcript: str | None = None) -> ExitCode:
        """Say why the run failed, if it did, and for an interrupted run recorded in
        `transcript` the command that continues it; the exit code of how it ended."""
        if outcome.error is not None:
            error(self.printer.shown(outcome.error))
        if outcome.stop_reason == "cancelled" and transcript is not None:
            command = self.resume_command(outcome.run_id, transcript)
            message = f"To continue the run: {command}"
            if self.options.as_json:
                aside(message)
            else:
                info(message)
        return exit_code_of(stop_reason=outcome.stop_reason)

    def resume_command(self, run_id: str, transcript: str) -> str:
        """The exact command that resumes run `run_id` of `transcript`: by the run's id
        when the transcript is in the session store, else by the transcript and the run;
        with the `--model` and `--registry` this run was given (the rest is recorded)."""
        words = resume_words(run_id, transcript, self.settings.sessions_dir)
        given = (
            ("--model", self.options.model),
            ("--registry", self.options.registry_spec),
            ("--approve", self.options.approve),
        )
        for flag, value in given:
            if value is not None:
                words += [flag, value]
        return shlex.join(words)
