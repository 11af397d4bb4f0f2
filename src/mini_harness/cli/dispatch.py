"""The root command's work: dispatch one tool and print what happened."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click
import orjson

from mini_harness.cli.options import F, SingleOption, option_group
from mini_harness.cli.output import aside, echo, echo_json, info, redacted_value
from mini_harness.cli.registry_spec import chosen_registry, complete_tool_name
from mini_harness.errors import (
    JsonSyntaxError,
    NotJsonError,
    TooDeepError,
    ToolCallError,
    UsageError,
    exit_code_of,
)
from mini_harness.events import JsonObject, JsonValue, to_wire
from mini_harness.events.jsonvalue import decode_json_input
from mini_harness.runtime import ToolRegistry, ToolRuntime, tool_error

if TYPE_CHECKING:
    from mini_harness.cli.acting import Session
    from mini_harness.runtime.approval import Approver


def tool_options(tool_help: str, input_of: str) -> Callable[[F], F]:
    """`--tool NAME` and `--tool-input JSON` (of the root, and of `run` after a task)."""
    return option_group(
        click.option(
            "--tool",
            cls=SingleOption,
            metavar="NAME",
            help=tool_help,
            shell_complete=complete_tool_name,
        ),
        click.option(
            "--tool-input",
            cls=SingleOption,
            metavar="JSON",
            help=f"{input_of} as a JSON object; @FILE reads it from a file, - from standard "
            "input. Without it the input is {}.",
        ),
    )


def read_tool_input(raw: str | None) -> str | None:
    """The text of `--tool-input`: as given, from a file (`@PATH`) or standard input (`-`)."""
    if raw == "-":
        return sys.stdin.read()
    if raw is not None and raw.startswith("@"):
        path = raw[1:]
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as exc:
            raise UsageError(f"--tool-input {raw}: cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--tool-input {raw}: {path} is not UTF-8 text") from None
    return raw


def parse_tool_input(raw: str | None) -> JsonValue:
    """The value of `--tool-input` ({} when it was not given); UsageError if it is not JSON,
    holds an integer wider than 64 bits or nests deeper than MAX_JSON_DEPTH levels."""
    if raw is None:
        return {}
    try:
        return decode_json_input(raw)
    except JsonSyntaxError:
        raise UsageError("--tool-input must be valid JSON") from None
    except TooDeepError as exc:
        raise UsageError(f"--tool-input is {exc}") from None
    except NotJsonError as exc:
        raise UsageError(f"--tool-input: {exc}") from None


def dispatch_tools(
    tool: str,
    registry_spec: str | None,
    session: Session,
    *,
    log: str | None,
    approve: str | None,
) -> tuple[ToolRegistry, Approver | None]:
    """The tools a one-shot dispatch of `tool` reaches, and what approves the call:
    `--registry`'s tools as they are, else every tool an agent run gets. Echo and the file
    tools are built alone (a dispatch of one loads nothing else); any other goes with the
    coding tools as the session makes them (the log out of their reach, `--redact-env`'s
    variables out of their commands), one that is not read-only behind the workspace's
    approval policy with `--approve`, else the settings' mode, as a run's calls are."""
    if registry_spec is not None and approve is not None:
        raise UsageError("--approve applies to the built-in tools, not to --registry's")
    registry = chosen_registry(registry_spec, session.workspace)
    if registry_spec is not None or tool in registry:
        return registry, None
    registry = session.built_in_tools(log)
    found = registry.get(tool)
    hints = found.definition.annotations if found is not None else None
    if found is None or (hints is not None and hints.read_only_hint):
        return registry, None
    return registry, session.approver()


def run_dispatch(
    registry: ToolRegistry,
    tool: str,
    tool_input: str | None,
    session: Session,
    *,
    log: str | None,
    as_json: bool,
    context_report: bool,
    approver: Approver | None = None,
    stored_as: str | None = None,
) -> None:
    """Dispatch the root's --tool with its --tool-input and print what happened. A
    dispatch recorded in the session store (--record) is run `stored_as`, the id its
    session is named by, and its RunStarted records the workspace (None: the current
    directory), as an agent run's does, so that `sessions` and `--last` find it.

    A failed call raises its ToolCallError (exit 1), or with --json prints the failure
    as the document and exits 1. What is printed is redacted as the log is (the
    session's secrets).
    """
    value = parse_tool_input(read_tool_input(tool_input))
    failure: ToolCallError | None = None
    with session.log(log, say=aside if as_json else None) as sink:
        runtime = ToolRuntime(registry, sink, approver=approver, run_id=stored_as)
        if stored_as is not None:
            from mini_harness.cli.stored import workspace_record

            runtime.start(workspace=workspace_record(session.workspace or os.curdir))
        try:
            result = runtime.dispatch(tool, value)
        except ToolCallError as exc:
            failure = exc
    where: JsonObject = {} if log is None else {"transcript": log, "runId": runtime.run_id}
    if failure is not None:
        if not as_json:
            raise failure
        document: JsonObject = {
            "ok": False,
            "name": tool,
            "error": to_wire(tool_error(failure)),
            **where,
        }
        echo_json(document)
        raise click.exceptions.Exit(exit_code_of(failed=True))
    shown = result.display_json()
    if as_json:
        echo_json({"ok": True, **shown, **where})
        return
    info(f"Task: Dispatch tool: {tool}")
    info("Model provider: none")
    info("Manual tool dispatch completed.")
    info(f"Tool result: {orjson.dumps(redacted_value(shown)).decode()}")
    if log is not None:
        info(f"Transcript: {log} (run {runtime.run_id})")
    if context_report:
        from mini_harness.runtime import dispatch_context, render_context_report

        click.echo("")
        report = render_context_report(dispatch_context(runtime.tools_snapshot, shown))
        echo(report, nl=False)
