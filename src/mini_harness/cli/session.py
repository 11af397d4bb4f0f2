"""One session: the one place a command that acts is assembled from the command line.

`run`, `resume`, `fork` and `replay --rerun --live-model` take the same options
(`agent_options`, `log_options`) and build their run from them here: the settings (flags
over the environment over the project's and the user's config.toml: cli/settings.py), the
model provider, the tools (the transcripts the run reads and writes out of their reach),
the approver (the workspace's policy with the approval mode, checked against the policy of
the run being continued), the log (`--log`, else a new transcript in the session store;
with the log flags, redacting every provider's key), what RunStarted records of the
workspace and the settings, what is printed (redacted as the log is), the `--json`
document and the exit code (`AgentSession`). It builds on what every command that acts
shares (cli/acting.py's `Session`: the settings, the workspace, the approval policy, the
log with the log flags, the secrets hidden from the log and from what is printed), as a
one-shot `--tool` dispatch, `undo` and `mcp`, which run tools without a model, do.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import click

from mini_harness.agent import (
    AgentConfig,
    AgentLoop,
    AgentOutcome,
    Opening,
    RequestLimits,
    choose_provider,
    provider_secrets,
    recorded_choice,
)
from mini_harness.agent.approval import PolicyApprover
from mini_harness.cli.acting import Session
from mini_harness.cli.export import live_export, otel_option
from mini_harness.cli.log_options import LogSettings
from mini_harness.cli.options import (
    APPROVE_HELP,
    F,
    approve_option,
    gathered,
    json_option,
    root_workspace,
    workspace_option,
)
from mini_harness.cli.output import aside, echo, echo_json, error, info, warn
from mini_harness.cli.printing import PrintingReporter
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.cli.stored import resume_words, workspace_record
from mini_harness.errors import ExitCode, ProviderSetupError, UsageError, exit_code_of
from mini_harness.events import (
    EventSink,
    JsonObject,
    RunSettings,
    RunWorkspace,
    ToolFailed,
    new_id,
    to_wire,
)
from mini_harness.events.wire import camel
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.transcripts import JsonlTranscript

_ORIGINS = ("resumed_from", "forked_from")
"""The fields of RunStarted (and of the Opening that makes it) naming the run it continues."""

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


class AgentSession(Session):
    """The pieces of one agent run, built from its options.

    The settings are read first (the flags over the environment over the workspace's
    `.mini-harness/config.toml` over the user's config.toml: a config file that cannot be
    used is a usage error), then the provider is chosen (so is a model that cannot be
    used), before anything else happens; its keys are redacted from the log and from
    everything printed. A run that continues another goes on with the model that run
    recorded, unless `--model` names one (`continuing`).
    """

    printer: PrintingReporter

    def __init__(
        self,
        options: AgentOptions,
        log_settings: LogSettings | None = None,
        *,
        workspace: str | None = None,
        flags: Mapping[str, Any] | None = None,
        continuing: Run | None = None,
    ) -> None:
        """`workspace` overrides the options' (a continued run's recorded one); `flags`
        are the command's other settings as given (`max-steps`, `max-context-tokens`);
        `continuing`: the run a resume or a fork continues."""
        self.options = options
        self.continuing = continuing
        self.recorded: str | None = None  # the --model that chooses the continued run's model
        super().__init__(
            log_settings,
            workspace=workspace or options.workspace,
            approve=options.approve,
            accept_policy=options.accept_policy,
            flags={
                "model": options.model,
                "model-timeout": options.model_timeout,
                "model-retries": options.model_retries,
                **(flags or {}),
            },
        )
        self.printer = PrintingReporter(self.provider.name)
        self.run_id = new_id()
        self._inside: dict[str, str] = {}  # the run's transcripts inside it, until said
        self._transcript: JsonlTranscript | None = None
        self._live: LiveExport | None = None

    def _provider_keys(self) -> tuple[str, ...]:
        """The provider is chosen once the settings are read (a model that cannot be used
        is a usage error before anything else happens); its keys are hidden."""
        limits = RequestLimits(self.settings["model-timeout"], self.settings["model-retries"])
        run = self.continuing
        model = run.started.model if run is not None and run.started is not None else None
        if model is not None:
            self.recorded = recorded_choice(model.provider, model.name)
        if self.options.model is not None or self.recorded is None:
            spec, name = self.settings["model"], self.settings.model_name
            self.provider = choose_provider(spec, os.environ, limits, model_name=name)
            return provider_secrets(self.provider)
        assert run is not None  # it recorded the model
        if self.recorded.startswith("script:"):
            # A script is a file the run read: the transcript must not choose which file
            # plays the model (a transcript from elsewhere could name any), so say it.
            raise UsageError(
                f"run {run.run_id} used {self.recorded}: a model script runs only when "
                "--model names it, never because a transcript does; give --model "
                f"{self.recorded} to go on with it, or another model"
            )
        # Not the settings' model (the config's, MINI_HARNESS_MODEL): those choose the
        # model of new runs; a conversation goes on with its own unless --model says so.
        try:
            self.provider = choose_provider(self.recorded, os.environ, limits)
        except ProviderSetupError as exc:
            raise UsageError(
                f"run {run.run_id} used {self.recorded}, and its model goes on with it "
                f"unless --model says otherwise: {exc.message.rstrip('.')}; or give "
                "--model PROVIDER:MODEL to continue it with another model (--model mock "
                "needs no key)"
            ) from None
        return provider_secrets(self.provider)

    def provider_line(self) -> str:
        """The "Model provider:" line; for a run that continues another, whether the model
        is the one that run recorded."""
        line = f"Model provider: {self.provider.name}"
        if self.recorded is None:
            return line
        if self.options.model is None:
            return f"{line} (as the run recorded)"
        return f"{line} (--model; the run recorded {self.recorded})"

    @property
    def stream(self) -> bool:
        """Whether the model's text is printed as it comes."""
        return not self.options.no_stream and not self.options.as_json

    def tools(self, *transcripts: str | None) -> ToolRegistry:
        """The run's tools: `--registry`'s, else the built-in ones (the coding tools among
        them) in the workspace, the `transcripts` it reads and writes out of their reach
        for writing (by path now, and by identity once `log` opens them),
        `--redact-env`'s variables out of every command's environment."""
        spec = self.options.registry_spec
        if spec is not None:
            # --registry's tools work where they like: a workspace only goes with them
            # when given (an error), not when it was recorded.
            return chosen_registry(spec, self.options.workspace or root_workspace())
        registry = self.built_in_tools(*transcripts)
        assert self.bound is not None  # built_in_tools made it
        kept = tuple(path for path in transcripts if path is not None)
        inside = zip(kept, self.bound.protected, strict=True)
        self._inside = {real: path for path, real in inside if self.bound.contains(real)}
        return registry

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
        return self.new_transcript(self.run_id)

    @contextlib.contextmanager
    def log(
        self, path: str | None, say: Callable[[str], None] | None = None
    ) -> Iterator[EventSink]:
        """The run's log at `path` (None: nothing is recorded), written with the log flags
        (its head signed when the run ends, with `--sign-with`, said on stderr with
        `--json`); a log that cannot be opened is a usage error before anything runs. The
        tools' workspace protects the file opened by its identity too. While it is open,
        the run is exported live when asked (`--otel`), closed with it."""
        if say is None and self.options.as_json:
            say = aside
        with super().log(path, say) as sink:
            if self.bound is not None and isinstance(sink, JsonlTranscript):
                self.bound.pin(sink.path, sink.identity)
            self._transcript = sink if isinstance(sink, JsonlTranscript) else None
            self._live = live_export(self.options.otel, self.redactor)
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
            self.printer.say(message)

    def document(self, outcome: AgentOutcome, opening: Opening | None = None) -> JsonObject:
        """The `--json` document of a run that ended; for a run that continues another,
        the run it names (`resumedFrom`, `forkedFrom`: as its RunStarted records them)."""
        origin: JsonObject = {}
        if opening is not None:
            origin = {camel(name): to_wire(getattr(opening, name)) for name in _ORIGINS}
        return {
            "runId": outcome.run_id,
            **origin,
            "stopReason": outcome.stop_reason,
            "finalText": outcome.final_text,
            "steps": outcome.steps,
            "usage": to_wire(outcome.usage),
        }

    def finish(
        self,
        outcome: AgentOutcome,
        transcript: str | None,
        opening: Opening | None = None,
        enclosing: Callable[[JsonObject], JsonObject] | None = None,
    ) -> None:
        """Print how the run ended: the `--json` document (in the one `enclosing` makes,
        if given), or where it was recorded."""
        if self.options.as_json:
            document = self.document(outcome, opening)
            echo_json(document if enclosing is None else enclosing(document), indent=True)
        elif transcript is not None:
            if outcome.stop_reason == "cancelled" and sys.stdout.isatty():
                click.echo("")  # the terminal echoed ^C where the cursor was
            self.printer.say(f"Transcript: {transcript} (run {outcome.run_id})")

    def continue_run(
        self,
        sink: EventSink,
        tools: ToolRegistry,
        approver: PolicyApprover,
        run: Run,
        opening: Opening,
        *,
        transcript: str,
        what: str,
        task: str | None = None,
        max_steps: int | None = None,
        closing: Sequence[ToolFailed] = (),
        enclosing: Callable[[JsonObject], JsonObject] | None = None,
    ) -> ExitCode:
        """Run a new run that continues `run` (`opening` says how: resumed or forked,
        from which step) with `task`, recorded in `sink` (the log at `transcript`), to its
        end, and report it as `run` does (`what` says what it is; `enclosing` makes the
        `--json` document hold the run's). Its RunStarted comes first (for a resume, the
        claim), then the `closing` events of the calls in doubt it closes. Returns the
        exit code; an interrupted run is told how to go on (`exit_code`)."""
        from mini_harness.replay.continuing.plans import continued_config

        config = continued_config(run, task=task, max_steps=max_steps, stream=self.stream)
        loop = self.loop(sink, tools, approver, config)
        loop.start(opening)
        self.say(what)
        for event in closing:
            sink.emit(event)
            self.say(f"Closed in-doubt call {event.call_id} ({event.name}) as interrupted")
        self.say(self.provider_line())
        outcome = loop.run(opening)
        if not self.options.as_json and outcome.steps == 0 and outcome.final_text is not None:
            info("The run had already answered:")
            echo(outcome.final_text)
        self.finish(outcome, transcript, opening, enclosing)
        return self.exit_code(outcome, transcript)

    def exit_code(self, outcome: AgentOutcome, transcript: str | None = None) -> ExitCode:
        """Say why the run failed, if it did, and for an interrupted run recorded in
        `transcript` the command that continues it; the exit code of how it ended."""
        if outcome.error is not None:
            error(outcome.error)
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
        with the `--registry` and `--approve` this run was given (the rest is recorded:
        the model among it, which a resume goes on with)."""
        words = resume_words(run_id, transcript, self.settings.sessions_dir)
        given = (
            ("--registry", self.options.registry_spec),
            ("--approve", self.options.approve),
        )
        for flag, value in given:
            if value is not None:
                words += [flag, value]
        return shlex.join(words)
