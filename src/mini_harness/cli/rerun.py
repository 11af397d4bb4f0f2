"""`--rerun`: the one path that runs a transcript's recorded calls again, for `replay` and
`view` alike.

Both take the same options (`rerun_options`, given to the command as one RerunOptions) and
get from them the same tools (an agent run's built-in tools in the workspace, or
`--registry`'s), the same check of the transcript before anything that may change things
runs (`--allow-side-effects` acts on what it records: it must verify), the same policy
every call passes before it runs again (the workspace's policy file with `--approve`; a
re-run never prompts, and never runs a call recorded as denied), and the same re-run of
the calls (`TranscriptRerun`). `replay` also replays agent runs offline
(cli/agent_replay.py) and may go on with a live model (cli/session.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import click

from mini_harness.cli.acting import Session
from mini_harness.cli.log_options import LogSettings
from mini_harness.cli.options import (
    RERUN_APPROVE_HELP,
    F,
    approve_option,
    gathered,
    refuse_without,
    root_workspace,
    side_effects_option,
    workspace_option,
)
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.cli.stored import acting_workspace, notice
from mini_harness.cli.verified import allow_unverified_option, verified_history
from mini_harness.errors import UsageError
from mini_harness.events import EventSink
from mini_harness.replay import TranscriptRerun
from mini_harness.replay.history import FoldItem, History
from mini_harness.runtime import ToolRegistry

if TYPE_CHECKING:
    from mini_harness.agent.approval import PolicyApprover


@attrs.frozen
class RerunOptions:
    """Whether to run the recorded calls again (`--rerun`), with which tools (`--registry`,
    else the built-in ones in `--workspace`), whether tools with side effects run too
    (`--allow-side-effects`), whether a transcript that does not verify may still be
    acted on (`--allow-unverified`), and how today's policy decides the calls that would
    run again (`--approve`; None: ask, which a re-run answers with a denial)."""

    rerun: bool = False
    registry_spec: str | None = None
    workspace: str | None = None
    allow_side_effects: bool = False
    allow_unverified: bool = False
    approve: str | None = None

    @property
    def root(self) -> str | None:
        """The workspace given: `--workspace`, else the root's (None: none)."""
        return self.workspace or root_workspace()

    def where(self, history: History, *, as_json: bool = False) -> str | None:
        """Where the built-in tools work again: the workspace given, else the one the runs
        of `history` recorded (that of the last run shown that recorded one: `--run`'s),
        said when it is not the current directory; None: the current directory.
        `--registry`'s tools work where they like."""
        if self.registry_spec is not None:
            return self.root
        recorded = [each for each in history.shown if each.workspace]
        say = functools.partial(notice, as_json=as_json)
        return acting_workspace(self.workspace, recorded[-1] if recorded else None, say)

    def session(self, workspace: str | None, log_settings: LogSettings | None = None) -> Session:
        """The re-run's Session in `workspace` (what `where` found; None: the current
        directory): its settings read there, the approval mode (`--approve`, else the
        config's), its log with the log flags, and the secrets it hides (the providers'
        keys, `--redact-env`, `--redact-pattern`, the config's) from its log, from what
        it prints, and from what a call gives now before it is compared with its record."""
        return Session(log_settings, workspace=workspace, approve=self.approve)

    def tools(self, session: Session, *transcripts: str | None) -> ToolRegistry:
        """The tools the calls run again with: `--registry`'s, else the built-in tools an
        agent run gets in the session's workspace (a re-run of its calls finds them all),
        the `transcripts` the command reads and writes out of their reach for writing."""
        if self.registry_spec is not None:
            return chosen_registry(self.registry_spec, session.workspace)
        return session.built_in_tools(*transcripts)

    def verified(self, path: str, *, live_model: bool = False) -> tuple[str, ...] | None:
        """A re-run that may change things (side effects, a live model going on) acts on
        what PATH records: PATH must be a file that verifies, or `--allow-unverified` is
        given. Returns the problems passed over, if any (None: it verifies, or nothing acts)."""
        if not (live_model or self.allow_side_effects):
            return None
        acting = "--live-model" if live_model else "--allow-side-effects"
        return verified_history(path, f"re-run with {acting}", allow=self.allow_unverified)

    @staticmethod
    def approver(session: Session) -> PolicyApprover:
        """What decides each call a re-run would run again: the policy file of the
        session's workspace as it is today, with its approval mode (`--approve`, else the
        config's); it never asks anyone. A policy file that cannot be used is a usage
        error."""
        from mini_harness.cli.coding import rerun_approver

        return rerun_approver(session.policy())

    def calls(
        self,
        items: Iterable[FoldItem],
        tools: ToolRegistry,
        session: Session,
        sink: EventSink | None = None,
    ) -> TranscriptRerun:
        """The recorded calls among `items`, each run again with `tools` (recorded in
        `sink`, if given) when the session's re-run approver allows it, and compared,
        redacted as the session's log is, with its record; another agent's imported calls
        as the tools they map to (cli/importing.py)."""
        from mini_harness.cli.importing import imported_call

        return TranscriptRerun(
            items,
            tools,
            allow_side_effects=self.allow_side_effects,
            sink=sink,
            translate=imported_call,
            approver=self.approver(session),
            redactor=session.redactor,
        )


_OPTIONS = tuple(field.name for field in attrs.fields(RerunOptions) if field.name != "rerun")


def rerun_options(
    what: str,
    *also: str,
    workspace_also: str = "",
    approve_also: str = "",
    unless: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """`--rerun` (`what` says what it does) and the options of a re-run, given to the
    command as one RerunOptions (`rerun`). Any of them, or of `also` (the command's own
    options that only a re-run takes), given without --rerun is a usage error, and so is
    --workspace with --registry; but an option named in `unless` serves the command too
    when the option it maps to is given (view's --workspace with --last), as
    `workspace_also` says in --workspace's help (`approve_also` adds to --approve's)."""
    excused = dict(unless or {})

    def approve(command: F) -> F:
        return approve_option(command, f"{RERUN_APPROVE_HELP}{approve_also}", default=None)

    gather = gathered(
        RerunOptions,
        "rerun",
        click.option("--rerun", is_flag=True, help=what),
        registry_option(when="--rerun"),
        workspace_option(
            "With --rerun: the directory the built-in file tools work in (default: the one "
            "given before the subcommand, else the one the runs recorded, else the current "
            f"directory){workspace_also}."
        ),
        side_effects_option("--rerun"),
        allow_unverified_option,
        approve,
    )

    def add(command: F) -> F:
        @functools.wraps(command)
        def call(*args: Any, rerun: RerunOptions, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            names = [
                name
                for name in (*_OPTIONS, *also)
                if not (name in excused and ctx.params.get(excused[name]))
            ]
            refuse_without(ctx, names, "--rerun", given=rerun.rerun)
            if rerun.registry_spec is not None and rerun.workspace is not None:
                raise UsageError(
                    "--workspace applies to the built-in tools; it cannot be used with --registry"
                )
            return command(*args, rerun=rerun, **kwargs)

        return gather(call)  # type: ignore[return-value]

    return add
