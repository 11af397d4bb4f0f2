"""`mini-harness run "TASK"`: run the agent on a task, printing each step as it happens."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import orjson

from mini_harness.agent.context import DEFAULT_SYSTEM_PROMPT, load_project_rules, request_parts
from mini_harness.agent.context import context_report as render_report
from mini_harness.agent.loop import AgentConfig, AgentLoop
from mini_harness.agent.providers import choose_provider, provider_secrets
from mini_harness.cli.coding import approve_option, make_approver
from mini_harness.cli.dispatch import parse_tool_input, read_tool_input, tool_options
from mini_harness.cli.log_options import (
    LOG_FLAGS,
    log_option,
    log_options,
    opened_log,
    redactor_for,
)
from mini_harness.cli.options import option_group, root_workspace, workspace_option
from mini_harness.cli.output import BadUsage, error, info, warn
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.events import JsonObject, to_wire
from mini_harness.runtime import ToolRuntime
from mini_harness.runtime.terminal import printable
from mini_harness.transcripts import Redactor

RESULT_WIDTH = 160
"""How much of a tool's output a step line shows."""

EXIT_CODES = {"final": 0, "max_steps": 1, "model_error": 1, "budget": 1, "cancelled": 130}


agent_options = option_group(
    click.option(
        "--model",
        metavar="PROVIDER:MODEL",
        help="mock, script:FILE, or a model provider (default: from the environment, else mock).",
    ),
    registry_option(
        "Give the agent the tools of this ToolRegistry (or a zero-argument callable "
        "returning one) instead of the built-in tools; the working directory is importable."
    ),
    approve_option,
    click.option("--no-stream", is_flag=True, help="Print whole responses, not text as it comes."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document at the end."),
)
"""The options `run`, `resume` and `fork` share: the model, the tools and how the run is
approved and printed."""


def _with_root_options(options: dict[str, Any]) -> dict[str, Any]:
    """`mini-harness [OPTIONS] "TASK"`: the root's options fill in those not given here."""
    inherited = (click.get_current_context().find_root().obj or {}).get("run_options")
    if inherited is None:
        return options
    for key, flag in (("tool", "--tool"), ("tool_input", "--tool-input")):
        if options[key] is not None and inherited[key] is not None:
            raise BadUsage(f"{flag} may be given only once")
    for key in ("tool", "tool_input", "registry_spec"):
        options[key] = options[key] if options[key] is not None else inherited[key]
    for key in ("context_report", "as_json"):
        options[key] = options[key] or inherited[key]
    if options["log"] is None and inherited["log"] is not None:
        # The root's --log comes with the root's log flags.
        options.update({key: inherited[key] for key in ("log", *LOG_FLAGS)})
    return options


def _system_prompt(path: str | None) -> str:
    """--system-prompt-file's text, or the default system prompt."""
    if path is None:
        return DEFAULT_SYSTEM_PROMPT
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"--system-prompt-file {path}: {exc}") from None


class PrintingReporter:
    """Prints a run as it goes: each step's tool call and outcome, the model's text.

    With a redactor (the provider's key, `--redact-env`, `--redact-pattern`) everything it
    prints is redacted as the log is; streamed text is then printed a word at a time (a
    line at a time with `--redact-pattern`), so that a secret split across chunks is
    still caught.
    """

    def __init__(self, provider_name: str, redactor: Redactor | None = None) -> None:
        self.header = "Mock model response:" if provider_name == "mock" else "Model response:"
        self._redactor = redactor if redactor is not None and redactor.active else None
        self._streaming = False
        self._held = ""  # streamed text not printed yet (with a redactor: the open line)
        self._line_open = False

    def shown(self, text: str) -> str:
        """`text` as it may be printed."""
        return text if self._redactor is None else self._redactor.redact_text(text)

    def _print(self, text: str) -> None:
        if text:
            click.echo(printable(text), nl=False)
            self._line_open = not text.endswith("\n")

    def text(self, chunk: str) -> None:
        if not self._streaming:
            info(self.header)
            self._streaming = True
        if self._redactor is None:
            self._print(chunk)
            return
        shown, self._held = self._redactor.stream(self._held, chunk)
        self._print(shown)

    def response(self, step: int, response: Any, streamed: bool) -> None:
        if self._streaming:
            self._print(self.shown(self._held))
            if self._line_open:
                click.echo("")
            self._streaming, self._held, self._line_open = False, "", False
        elif response.message.content:
            info(self.header)
            click.echo(printable(self.shown(response.message.content)))

    def tool_called(self, step: int, call: Any) -> None:
        where = f"Step {step}" if step else "Before the task"  # step 0: --tool
        info(self.shown(f"{where}: {call.name} {call.arguments}"))

    def tool_done(self, step: int, outcome: Any) -> None:
        if outcome.error is not None:
            info(self.shown(f"  failed: {outcome.error}"))
            return
        shown = self.shown(orjson.dumps(outcome.output).decode())
        if len(shown) > RESULT_WIDTH:
            shown = shown[: RESULT_WIDTH - 3] + "..."
        info(f"  ok: {shown}")

    def retry(self, error: Any) -> None:
        warn(f"model request failed ({self.shown(error.message)}); retrying")


def print_document(outcome: Any, printer: PrintingReporter, **origin: Any) -> None:
    """The --json document of a run that ended; `origin` names the run it continues."""
    document: JsonObject = {
        "runId": outcome.run_id,
        **origin,
        "stopReason": outcome.stop_reason,
        "finalText": None if outcome.final_text is None else printer.shown(outcome.final_text),
        "steps": outcome.steps,
        "usage": to_wire(outcome.usage),
    }
    click.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())


def exit_code(outcome: Any, printer: PrintingReporter) -> int:
    """Say why a run failed, if it did; the exit code of how it ended."""
    if outcome.error is not None:
        error(printer.shown(outcome.error))
    return EXIT_CODES[outcome.stop_reason]


@click.command("run")
@click.argument("task", nargs=-1, required=True)
@log_option("Record the whole run (model requests and tool calls) in a JSONL transcript.")
@log_options
@click.option("--max-steps", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--system-prompt-file",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Use this file's text as the system prompt.",
)
@click.option(
    "--max-context-tokens",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Budget for each request (estimated tokens): old tool results are trimmed first; "
    "if it still does not fit, the run stops.",
)
@click.option("--context-report", is_flag=True, help="Print the report of the last request.")
@workspace_option(
    "Root directory of the file tools and of AGENTS.md. Default: the current directory."
)
@agent_options
@tool_options("Dispatch this tool first; its result goes in the context.", "The --tool's input")
def run_command(task: tuple[str, ...], **options: Any) -> None:
    """Run the agent on TASK until it answers or reaches a limit.

    Exit codes: 0 a final answer; 1 no final answer (step limit, model error, budget);
    2 usage errors; 130 interrupted.
    """
    # The log flags are among the options: `options` is also the log's settings.
    options = _with_root_options(options)
    tool, log, as_json = options["tool"], options["log"], options["as_json"]
    task_text = " ".join(task).strip()
    if not task_text:
        raise click.UsageError("the task is empty")
    if options["tool_input"] is not None and tool is None:
        raise click.UsageError("--tool-input needs --tool NAME")
    manual = None
    if tool is not None:
        manual = (tool, parse_tool_input(read_tool_input(options["tool_input"])))
    workspace = options["workspace"] or root_workspace()
    provider = choose_provider(options["model"], os.environ)
    keys = provider_secrets(provider)
    system_prompt = _system_prompt(options["system_prompt_file"])
    redacted = tuple(options["redact_env"] or ())
    tools = agent_tools(options["registry_spec"], workspace, redacted, protected=(log,))
    approver = make_approver(workspace or os.curdir, options["approve"])
    rules = load_project_rules(Path(workspace or os.curdir), Path.cwd(), warn=warn)
    config = AgentConfig(
        task=task_text,
        system_prompt=system_prompt,
        rules=rules,
        max_steps=options["max_steps"],
        max_context_tokens=options["max_context_tokens"],
        stream=not options["no_stream"] and not as_json,
        manual_tool=manual,
    )
    printer = PrintingReporter(provider.name, redactor_for(options, keys))
    with opened_log(log, options, keys) as sink:  # a log that cannot be opened stops here
        if not as_json:
            info(printer.shown(f"Task: {task_text}"))
            info(f"Model provider: {provider.name}")
        runtime = ToolRuntime(tools, sink, approver=approver)
        outcome = AgentLoop(runtime, provider, config, None if as_json else printer).run()
    if as_json:
        print_document(outcome, printer)
    elif log is not None:
        info(f"Transcript: {log} (run {outcome.run_id})")
    if options["context_report"] and outcome.last_request is not None and not as_json:
        parts = request_parts(
            system_prompt, rules, runtime.tools_snapshot, outcome.last_request.messages
        )
        click.echo("")
        click.echo(render_report(parts, outcome.last_input_tokens), nl=False)
    raise click.exceptions.Exit(exit_code(outcome, printer))
