"""`mini-harness mcp`: serve the tool registry to MCP clients over stdio."""

from __future__ import annotations

import functools
import os

import click

from mini_harness.agent.approval import AsyncPolicyApprover
from mini_harness.cli.acting import Session
from mini_harness.cli.export import exported, live_export, otel_option
from mini_harness.cli.log_options import (
    LogSettings,
    log_option,
    log_options,
    refuse_without_log,
    warn_quarantined,
)
from mini_harness.cli.options import approve_option, workspace_option
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.errors import OutputError, UsageError
from mini_harness.mcp.server import ElicitingPrompter, run_stdio
from mini_harness.runtime import ToolRuntime


@click.command("mcp")
@log_option("nothing is recorded")
@log_options
@workspace_option(
    "The directory the built-in file tools work in (default: the root's --workspace, "
    "else the current directory)."
)
@registry_option()
@functools.partial(
    approve_option,
    help_text="How calls that need approval are decided: ask (the client's user, through MCP "
    "elicitation; denied when the client cannot ask), auto (allow them), never (deny them). "
    "Deny rules of .mini-harness/policy.toml always stand; read-only tools are allowed. "
    "Default: the config's approve, else ask.",
    default=None,
)
@otel_option
def mcp_command(
    *,
    log: str | None,
    workspace: str | None,
    registry_spec: str | None,
    approve: str | None,
    log_settings: LogSettings,
    otel: bool,
) -> None:
    """Serve the tools to an MCP client (Claude Code, Codex, Cursor, ...) over stdio.

    The client starts this command and speaks MCP on its stdin/stdout; tools/list returns
    the registry's definitions and every tools/call is validated, run and recorded like a
    CLI dispatch. One session is one run in the transcript. Invalid input and tool
    failures come back as tool results with isError set and our message; an unknown tool
    name is a protocol error. Diagnostics go to stderr only.

    Calls are decided by the workspace's approval policy, as for `run`: what would ask is
    asked of the client's user (MCP elicitation), or denied when the client cannot ask.
    The approval mode is --approve, else `approve` of the settings (`mini-harness config`),
    as for `run`. Every decision is recorded.

    The session ends at end of input, SIGTERM or SIGINT (exit 0); calls still running are
    recorded as cancelled. Needs the `mcp` extra:

    \b
      pip install "mini-harness[mcp]"
    """
    # Checked before anything opens a file: a closed fd 0 would be reused by the next
    # descriptor opened (the transcript, the event loop's selector) and served as stdin.
    try:
        os.fstat(0)
    except OSError:
        raise UsageError(
            "stdin is closed: the mcp command reads MCP messages on stdin (an MCP client starts it)"
        ) from None
    try:
        import mcp.server.lowlevel  # noqa: F401  (fail here, before any output)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "mcp":
            raise UsageError(
                'the mcp command needs the MCP SDK: pip install "mini-harness[mcp]"'
            ) from None
        raise UsageError(f"cannot import the MCP SDK: {exc}") from None

    refuse_without_log(click.get_current_context(), recorded=log is not None)
    # Assembled as every command that acts: its settings (the approval mode as a run
    # takes it: --approve, else the environment's, the project's config.toml when it
    # tightens, the user's), what it says on stderr (stdout carries the protocol),
    # redacted as its log is.
    session = Session(log_settings, workspace=workspace, approve=approve, err=True)
    registry = chosen_registry(registry_spec, session.workspace)
    policy = session.policy()
    with (
        session.log(log) as opened,
        exported(live_export(otel, session.redactor), opened) as sink,
    ):
        approver = AsyncPolicyApprover(policy, ElicitingPrompter())
        runtime = ToolRuntime(registry, sink, approver=approver)
        runtime.start()  # RunStarted now: a torn tail it sets aside is reported up front
        warn_quarantined(opened)
        names = ", ".join(d.name for d in registry.list()) or "none"
        where = f"; transcript {log}" if log is not None else ""
        session.say(
            f"MCP server on stdio: tools {names}; approve {session.approve} "
            f"({session.settings.source('approve')}); "
            f"run {runtime.run_id}{where}"
        )
        try:
            ended_by = run_stdio(runtime)
        except OutputError as exc:  # the console script's stdout (see cli/output.py)
            session.fail(f"MCP session failed: {exc.reason}")
        except OSError as exc:
            session.fail(f"MCP session failed: {exc.strerror or exc}")
    session.say(f"MCP session ended ({ended_by})")
