"""The command line: the one place that wires runtime, transcripts, replay and tools together.

`cli` is the console script. The root command dispatches one tool; each subcommand lives
in a sibling module, imported only when that subcommand is looked up (click's lazy-group
recipe), so a root dispatch never loads them.
"""

from __future__ import annotations

import atexit
import functools
import gc
import importlib
import itertools
import shlex
import sys
from typing import Any

import click

from mini_harness._version import __version__
from mini_harness.cli.dispatch import dispatch_tools, run_dispatch, tool_options
from mini_harness.cli.log_options import (
    LOG_SETTINGS,
    LogSettings,
    log_option,
    log_options,
    refuse_without_log,
)
from mini_harness.cli.options import (
    APPROVE_HELP,
    approve_option,
    context_report_option,
    given_options,
    json_option,
    refuse_without,
    workspace_option,
)
from mini_harness.cli.output import (
    describe,
    error,
    exit_code_for,
    forget_keys,
    guard_streams,
    quiet,
)
from mini_harness.cli.registry_spec import registry_option
from mini_harness.cli.signals import exit_status, take_terminating_signals
from mini_harness.errors import ExitCode, OutputError, UsageError

__all__ = ["cli"]


class HarnessGroup(click.Group):
    """A group with lazily imported subcommands whose errors read
    `[mini-harness] Error: ...`, never a traceback."""

    def __init__(self, *args: Any, lazy_subcommands: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # name -> "module:attribute" of a click command, imported on first lookup
        self.lazy_subcommands = lazy_subcommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_subcommands:
            module, _, attribute = self.lazy_subcommands[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def is_task(self, ctx: click.Context, name: str) -> bool:
        """Whether a first argument that names no subcommand is a task for the agent: it
        is unless it looks like a mistyped subcommand (one word close to a name)."""
        import difflib  # only a first argument that may be a task needs it

        commands = self.list_commands(ctx)
        if name in commands:
            return False
        return " " in name or not difflib.get_close_matches(name, commands, n=1, cutoff=0.75)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            args = self._as_run(ctx, args)
        return super().parse_args(ctx, args)

    def _as_run(self, ctx: click.Context, args: list[str]) -> list[str]:
        """`args` as `run`'s, when they ask for an agent run: a task (`mini-harness
        --max-steps 2 "TASK"`) or `run` (`mini-harness --log t.jsonl run "TASK"`) after
        options. Every option given before it goes to `run`, which takes them before or
        after the task alike; the root's own (--debug) stay the root's. Anything else is
        left to the root's parser (a dispatch, another subcommand, an unknown option)."""
        spellings = _spellings(self.get_params(ctx))
        run: click.Command | None = None
        before: list[tuple[list[str], str | None]] = []  # each option's words, its name
        index = 0
        while index < len(args) and args[index].startswith("-") and args[index] != "-":
            if args[index] == "--":
                break
            spelling = args[index].partition("=")[0]
            param = spellings.get(spelling)
            if param is None:
                run = run or self.get_command(ctx, "run")
                param = _spellings(run.get_params(ctx)).get(spelling) if run else None
            if param is None:
                return args  # not an option of either: the parser says so
            width = 1 if "=" in args[index] or param.is_flag or param.count else 2
            before.append((args[index : index + width], param.name))
            index += width
        rest = args[index:]
        first = rest[1] if rest[:1] == ["--"] and len(rest) > 1 else rest[0] if rest else None
        if first is None:
            return args
        if rest[0] == "run":
            rest = rest[1:]
        elif first == rest[0] and not self.is_task(ctx, first):
            return args
        run = run or self.get_command(ctx, "run")
        takes = {param.name for param in run.get_params(ctx)} if run else set()
        own = [word for words, name in before if name not in takes for word in words]
        given = [word for words, name in before if name in takes for word in words]
        return [*own, "run", *given, *rest]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand `args[0]` names; a name that looks like a mistyped subcommand is
        a usage error that suggests the closest ones (a task went to `run` already)."""
        name = args[0]
        command = self.get_command(ctx, name)
        if command is None and not ctx.resilient_parsing:
            if name.startswith("-"):
                self.parse_args(ctx, args)  # an option after all: let the parser report it
            commands = self.list_commands(ctx)
            refused = click.exceptions.NoSuchCommand(name, possibilities=commands, ctx=ctx)
            # It may have been a one-word task: say how to give it to the agent.
            words = list(itertools.takewhile(lambda word: not word.startswith("-"), args))
            task = shlex.quote(" ".join(words))
            hint = f"To give it to the agent as a task: mini-harness run {task}"
            raise click.UsageError(f"{refused.format_message()} {hint}", ctx=ctx)
        return (name if command else None), command, args[1:]

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a BaseException escaping it (a handler's SystemExit or
        GeneratorExit) becomes one error line and exit 1. Click's own exits and Ctrl-C
        (exit 130) go on as they are."""
        try:
            return super().invoke(ctx)
        except (Exception, KeyboardInterrupt):
            raise
        except BaseException as exc:
            raise click.ClickException(f"the command ended abruptly: {describe(exc)}") from None

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        forget_keys()  # what an earlier command in this process protected
        if standalone_mode:
            guard_streams()
            take_terminating_signals()
            # The process ends when the command does: the collector's last passes over
            # what it loaded (every module, class and function) would only free memory
            # the process gives back anyway, and cost more than the dispatch itself. At
            # exit they are frozen out of its reach; exit handlers run as before.
            atexit.unregister(gc.freeze)
            atexit.register(gc.freeze)
        try:
            try:
                code = super().main(
                    args, prog_name or "mini-harness", complete_var, standalone_mode=False, **extra
                )
            except SystemExit as done:  # click's own: shell completion, a closed pipe
                code = done.code
            except Exception as exc:  # mapped to a code, or re-raised, by exit_code_for
                code = exit_code_for(exc)
            code = exit_status(code) if isinstance(code, int) else 0
            if standalone_mode:
                # Flushed while a failure can still be said: at exit the interpreter would
                # only print an "Exception ignored" traceback (exit 120).
                sys.stdout.flush()
        except OutputError as exc:
            quiet([sys.stdout])
            error(f"cannot write the output: {exc.reason}")
            code = ExitCode.FAILED
        except BrokenPipeError:  # the reader stopped early: as click does, exit 1 quietly
            quiet([sys.stdout, sys.stderr])
            code = ExitCode.FAILED
        if not standalone_mode:
            return code
        sys.exit(code)


def _spellings(params: list[click.Parameter]) -> dict[str, click.Option]:
    """Each option of `params` by every spelling of it (`--log`, `--transcript`)."""
    return {
        spelling: param
        for param in params
        if isinstance(param, click.Option)
        for spelling in (*param.opts, *param.secondary_opts)
    }


@click.group(
    cls=HarnessGroup,
    lazy_subcommands={
        "tools": "mini_harness.cli.tools:tools_command",
        "transcript": "mini_harness.cli.transcript:transcript_group",
        "mcp": "mini_harness.cli.mcp:mcp_command",
        "replay": "mini_harness.cli.replay:replay_command",
        "run": "mini_harness.cli.agent:run_command",
        "show": "mini_harness.cli.show:show_command",
        "undo": "mini_harness.cli.undo:undo_command",
        "view": "mini_harness.cli.view:view_command",
        "import": "mini_harness.cli.importing:import_command",
        "resume": "mini_harness.cli.resume:resume_command",
        "fork": "mini_harness.cli.resume:fork_command",
        "sessions": "mini_harness.cli.sessions:sessions_group",
        "config": "mini_harness.cli.config:config_command",
        "export": "mini_harness.cli.export:export_group",
    },
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@tool_options("Dispatch this tool once (see `mini-harness tools`).", "The tool's input")
@context_report_option(
    "After the result, print the Context Explorer report (estimated tokens per part)."
)
@json_option("Print the result, or the failure, as one JSON document instead of the lines.")
@log_option("nothing is recorded, unless --record")
@click.option(
    "--record",
    is_flag=True,
    help="For --tool: record the dispatch in the session store, as an agent run is "
    "(`mini-harness sessions` lists it; `show --last` shows it).",
)
@log_options
@workspace_option(
    "Root directory the built-in tools are confined to. Default: the current directory."
)
@registry_option()
@functools.partial(
    approve_option,
    help_text=f"For --tool: {APPROVE_HELP} Default: the config's approve, else ask.",
    default=None,
)
@click.option(
    "--debug",
    is_flag=True,
    help="Show the Python traceback when your own code fails (a --registry module that "
    "cannot be imported).",
)
@click.version_option(__version__, "--version", prog_name="mini-harness")
@click.pass_context
def cli(
    ctx: click.Context,
    /,
    *,
    tool: str | None,
    tool_input: str | None,
    context_report: bool,
    as_json: bool,
    log: str | None,
    record: bool,
    log_settings: LogSettings,
    workspace: str | None,
    registry_spec: str | None,
    approve: str | None,
    debug: bool,
) -> None:
    """An event-sourced runtime for coding agents.

    Run the agent on a task, or dispatch one tool with validated input; every step is
    recorded in an append-only JSONL transcript. An agent run is recorded in the session
    store unless --log names a file, a dispatch with --log or --record (`mini-harness
    sessions` lists them, `--last` or a run's id finds one again; `mini-harness config`
    shows the settings):

    \b
      mini-harness "list the Python files and summarise one"
      mini-harness resume --last "now fix the first one"
      mini-harness --tool echo --tool-input '{"text":"hello"}' --log t.jsonl

    A task that is also a subcommand's name goes through `mini-harness run "TASK"`.
    Every option of `run` (`mini-harness run --help`) may come before the task as well
    as after it: `mini-harness --max-steps 2 "TASK"` is `mini-harness "TASK" --max-steps
    2`; the options above, given with a task, are the run's (--tool is dispatched first).

    Exit codes: 0 success; 1 the tool failed, or the run ended without a final answer;
    2 usage errors (bad flags, --tool-input that is not JSON, a transcript that cannot be
    used); 130 interrupted.
    """
    # Subcommands that build a registry read the workspace from here.
    ctx.ensure_object(dict).update(workspace=workspace, debug=debug)
    given = given_options(ctx, _DISPATCH_OPTIONS)
    if ctx.invoked_subcommand is not None:
        if given:
            raise click.UsageError(
                f"{', '.join(given)} cannot be combined with `{ctx.invoked_subcommand}`"
            )
        return
    if tool is None:
        refuse_without(ctx, _DISPATCH_OPTIONS, "--tool NAME", given=False)
        click.echo(ctx.get_help())
        return
    if as_json and context_report:
        raise UsageError("--json cannot be combined with --context-report")
    if record and log is not None:
        raise UsageError("--record cannot be combined with --log: the dispatch is recorded there")
    refuse_without_log(ctx, recorded=log is not None or record)
    from mini_harness.cli.acting import Session  # what a dispatch shares with a run

    session = Session(log_settings, workspace=workspace, approve=approve)
    run_id: str | None = None
    if record:
        from mini_harness.events import new_id

        run_id = new_id()
        log = session.new_transcript(run_id)
    registry, approver = dispatch_tools(tool, registry_spec, session, log=log, approve=approve)
    run_dispatch(
        registry,
        tool,
        tool_input,
        session,
        log=log,
        as_json=as_json,
        context_report=context_report,
        approver=approver,
        stored_as=run_id,
    )


_DISPATCH_OPTIONS = (
    "tool", "tool_input", "context_report", "as_json", "log", "record", "registry_spec", "approve",
    *LOG_SETTINGS,
)  # fmt: skip
"""The root's options that ask for a dispatch: with a subcommand, or without --tool, an
error (--workspace and --debug serve every subcommand)."""
