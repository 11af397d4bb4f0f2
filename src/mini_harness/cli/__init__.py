"""The command line: the one place that wires runtime, transcripts, replay and tools together.

`cli` is the console script. The root command dispatches one tool; each subcommand lives
in a sibling module, imported only when that subcommand is looked up (click's lazy-group
recipe), so a root dispatch never loads them.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from typing import Any

import click

from mini_harness._version import __version__
from mini_harness.cli.dispatch import run_dispatch, tool_options
from mini_harness.cli.log_options import LOG_FLAGS, given_log_flags, log_option, log_options
from mini_harness.cli.options import SingleOption, typed, workspace_option
from mini_harness.cli.output import (
    BadUsage,
    describe,
    error,
    exit_code_for,
    guard_streams,
    quiet,
)
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.errors import ExitCode, OutputError

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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand `args[0]` names. Anything else is a task for the agent
        (`mini-harness "TASK"` is `mini-harness run "TASK"`), unless it is an option or
        looks like a mistyped subcommand: then a usage error suggests the closest ones."""
        name = args[0]
        command = self.get_command(ctx, name)
        if command is None and not ctx.resilient_parsing:
            if name.startswith("-"):
                self.parse_args(ctx, args)  # an option after all: let the parser report it
            commands = self.list_commands(ctx)
            if " " in name or not difflib.get_close_matches(name, commands, n=1, cutoff=0.75):
                return "run", self.get_command(ctx, "run"), args
            raise click.exceptions.NoSuchCommand(name, possibilities=commands, ctx=ctx)
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
        if standalone_mode:
            guard_streams()
        try:
            try:
                code = super().main(
                    args, prog_name or "mini-harness", complete_var, standalone_mode=False, **extra
                )
            except SystemExit as done:  # click's own: shell completion, a closed pipe
                code = done.code
            except Exception as exc:  # mapped to a code, or re-raised, by exit_code_for
                code = exit_code_for(exc)
            code = code if isinstance(code, int) else 0
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


@click.group(
    cls=HarnessGroup,
    lazy_subcommands={
        "tools": "mini_harness.cli.tools:tools_command",
        "transcript": "mini_harness.cli.transcript:transcript_group",
        "mcp": "mini_harness.cli.mcp:mcp_command",
        "replay": "mini_harness.cli.replay:replay_command",
        "run": "mini_harness.cli.agent:run_command",
        "show": "mini_harness.cli.show:show_command",
        "undo": "mini_harness.cli.coding:undo_command",
        "view": "mini_harness.cli.view:view_command",
        "resume": "mini_harness.cli.resume:resume_command",
        "fork": "mini_harness.cli.resume:fork_command",
    },
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@tool_options("Dispatch this tool once (see `mini-harness tools`).", "The tool's input")
@click.option(
    "--context-report",
    is_flag=True,
    help="After the result, print the Context Explorer report (estimated tokens per part).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result, or the failure, as one JSON document instead of the lines.",
)
@log_option("Append this run's events to a JSONL transcript (created if missing).")
@log_options
@workspace_option(
    "Root directory the file tools (list_files, read_file, search_text) are confined "
    "to. Default: the current directory.",
    cls=SingleOption,
)
@registry_option(
    "Dispatch to this ToolRegistry (or a zero-argument callable returning one) instead of "
    "the built-in tools. The current directory is importable."
)
@click.option(
    "--debug",
    is_flag=True,
    help="Show the Python traceback when your own code fails (a --registry module that "
    "cannot be imported).",
)
@click.version_option(__version__, "--version", prog_name="mini-harness")
@click.pass_context
def cli(ctx: click.Context, /, *, workspace: str | None, debug: bool, **options: Any) -> None:
    """An event-sourced runtime for coding agents.

    Run the agent on a task, or dispatch one tool with validated input; every step is
    recorded in an append-only JSONL transcript:

    \b
      mini-harness "list the Python files and summarise one" --log t.jsonl
      mini-harness --tool echo --tool-input '{"text":"hello"}' --log t.jsonl

    A task that is also a subcommand's name goes through `mini-harness run "TASK"`.

    Exit codes: 0 success; 1 the tool failed, or the run ended without a final answer;
    2 usage errors (bad flags, --tool-input that is not JSON, a transcript that cannot be
    used); 130 interrupted.
    """
    # Subcommands that build a registry read the workspace from here.
    ctx.ensure_object(dict).update(workspace=workspace, debug=debug)
    if ctx.invoked_subcommand == "run":
        # `mini-harness [OPTIONS] "TASK"`: these options are the run's (as in the
        # reference: --tool first dispatches that tool, then the agent works on the task).
        ctx.obj["run_options"] = options
        return
    # The log flags are among the options: `options` is also the log's settings.
    given = [typed(ctx, k) for k, value in options.items() if value and k not in LOG_FLAGS]
    given += given_log_flags(options)
    if ctx.invoked_subcommand is not None:
        if given:
            raise click.UsageError(
                f"{', '.join(given)} cannot be combined with `{ctx.invoked_subcommand}`"
            )
        return
    if options["tool"] is None:
        for flag in given:
            raise click.UsageError(f"{flag} needs --tool NAME")
        click.echo(ctx.get_help())
        return
    if options["log"] is None and given_log_flags(options):
        raise click.UsageError(f"{given_log_flags(options)[0]} needs --log PATH")
    if options["as_json"] and options["context_report"]:
        raise BadUsage("--json cannot be combined with --context-report")
    run_dispatch(chosen_registry(options["registry_spec"], workspace), options)
