"""The command line: the one place that wires runtime, transcripts, replay and tools together.

The root command dispatches one tool; subcommands live in sibling modules.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, NoReturn

import click

from mini_harness._version import __version__
from mini_harness.cli.log_options import given_log_flags, log_option, log_options
from mini_harness.console import (
    PREFIX,
    ExitWith,
    UsageProblem,
    error,
    info,
    run_dispatch,
)

__all__ = ["PREFIX", "BadUsage", "cli", "error", "fail", "info", "main", "root_workspace"]


def fail(message: str, code: int) -> NoReturn:
    """Print an error line and exit with `code` (1: the work failed, 2: usage)."""
    error(message)
    raise click.exceptions.Exit(code)


def root_workspace() -> str | None:
    """The root's --workspace (`mini-harness --workspace DIR SUBCOMMAND`), if it was given."""
    workspace: str | None = (click.get_current_context().find_root().obj or {}).get("workspace")
    return workspace


class BadUsage(click.UsageError):
    """A usage error whose message says all there is to say (no `--help` hint)."""


# Each subcommand lives in its own module of this package, imported only when that
# subcommand is looked up (run, or listed by --help): a root dispatch never loads them.
_SUBCOMMANDS = {
    "tools": ("mini_harness.cli.tools", "tools_command"),
    "transcript": ("mini_harness.cli.transcript", "transcript_group"),
    "mcp": ("mini_harness.cli.mcp", "mcp_command"),
    "replay": ("mini_harness.cli.replay", "replay_command"),
    "run": ("mini_harness.cli.agent", "run_command"),
    "resume": ("mini_harness.cli.resume", "resume_command"),
    "fork": ("mini_harness.cli.resume", "fork_command"),
}


class HarnessGroup(click.Group):
    """A group whose errors read `[mini-harness] Error: ...`, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            # An unknown name loads them all: click suggests close names from self.commands.
            for name in [cmd_name] if cmd_name in _SUBCOMMANDS else list(_SUBCOMMANDS):
                if name not in self.commands:
                    module, attribute = _SUBCOMMANDS[name]
                    self.add_command(getattr(importlib.import_module(module), attribute), name)
        return self.commands.get(cmd_name)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from mini_harness.errors import MiniHarnessError

        try:
            code = super().main(
                args, prog_name or "mini-harness", complete_var, standalone_mode=False, **extra
            )
        except click.UsageError as exc:
            error(exc.format_message())
            if not isinstance(exc, BadUsage):
                hint = exc.ctx.command_path if exc.ctx else "mini-harness"
                click.echo(f"{PREFIX} Try '{hint} --help' for help.", err=True)
            code = 2
        except click.ClickException as exc:
            error(exc.format_message())
            code = exc.exit_code
        except click.Abort:
            error("interrupted")
            code = 130
        except UsageProblem as exc:  # from the click-free parts (mini_harness.console)
            error(exc.message)
            code = 2
        except ExitWith as exc:
            code = exc.code
        except MiniHarnessError as exc:
            error(exc.message)
            code = 2
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


@click.group(
    cls=HarnessGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--tool", metavar="NAME", help="Dispatch this tool once (see `mini-harness tools`).")
@click.option(
    "--tool-input",
    metavar="JSON",
    help="The tool's input as a JSON object. Without it the input is {}.",
)
@click.option(
    "--context-report",
    is_flag=True,
    help="After the result, print the Context Explorer report (estimated tokens per part).",
)
@log_option("Append this run's events to a JSONL transcript (created if missing).")
@log_options
@click.option(
    "--workspace",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="Root directory the file tools (list_files, read_file, search_text) are confined "
    "to. Default: the current directory.",
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
    log: str | None,
    workspace: str | None,
    **log_settings: Any,
) -> None:
    """An event-sourced tool runtime for coding agents.

    Dispatch one tool with validated input, print its result, and record every call in an
    append-only JSONL transcript:

    \b
      mini-harness --tool echo --tool-input '{"text":"hello"}' --log t.jsonl

    Exit codes: 0 success; 1 the tool failed; 2 usage errors (bad flags, --tool-input that
    is not JSON, a transcript that cannot be used).
    """
    # Subcommands that build a registry read the workspace from here.
    ctx.ensure_object(dict)["workspace"] = workspace
    if ctx.invoked_subcommand is not None:
        given = [
            flag
            for flag, value in (
                ("--tool", tool),
                ("--tool-input", tool_input),
                ("--context-report", context_report),
                ("--log", log),
            )
            if value
        ] + given_log_flags(log_settings)
        if given:
            raise click.UsageError(
                f"{', '.join(given)} cannot be combined with `{ctx.invoked_subcommand}`"
            )
        return
    if tool is None:
        for flag, value in (
            ("--tool-input", tool_input),
            ("--context-report", context_report),
            ("--log", log),
        ):
            if value:
                raise click.UsageError(f"{flag} needs --tool NAME")
        for flag in given_log_flags(log_settings):
            raise click.UsageError(f"{flag} needs --tool NAME")
        click.echo(ctx.get_help())
        return
    if log is None and given_log_flags(log_settings):
        raise click.UsageError(f"{given_log_flags(log_settings)[0]} needs --log PATH")
    run_dispatch(
        tool,
        tool_input,
        context_report=context_report,
        log=log,
        workspace=workspace,
        settings=log_settings,
    )


def main() -> None:
    """Run the click command (the console script, mini_harness.console.main, comes here for
    anything but a plain dispatch)."""
    cli()
