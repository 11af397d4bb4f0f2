"""`mini-harness run "TASK"`: run the agent on a task, printing each step as it happens.

Its options may come before the task or after it, and so may the root's: `mini-harness
--max-steps 2 "TASK"` is `mini-harness run "TASK" --max-steps 2` (see HarnessGroup).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from mini_harness.agent import DEFAULT_SYSTEM_PROMPT, AgentConfig, load_project_rules, request_parts
from mini_harness.agent import context_report as render_report
from mini_harness.cli.dispatch import parse_tool_input, read_tool_input, tool_options
from mini_harness.cli.log_options import (
    LogSettings,
    log_option,
    log_options,
    no_log_option,
    refuse_without_log,
)
from mini_harness.cli.options import (
    context_report_option,
    max_steps_option,
    number_option,
    refuse_without,
)
from mini_harness.cli.output import echo, warn
from mini_harness.cli.session import AgentOptions, AgentSession, agent_options
from mini_harness.errors import UsageError


def _system_prompt(path: str | None) -> str:
    """--system-prompt-file's text, or the default system prompt."""
    if path is None:
        return DEFAULT_SYSTEM_PROMPT
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"--system-prompt-file {path}: {exc}") from None


@click.command("run")
@click.argument("task", nargs=-1, required=True)
@log_option("a new transcript in the session store (see `mini-harness sessions`)")
@no_log_option
@log_options
@max_steps_option("the config's max-steps, else 10")
@click.option(
    "--system-prompt-file",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Use this file's text as the system prompt.",
)
@number_option(
    "--max-context-tokens",
    help_text="Budget for each request (estimated tokens): old tool results are trimmed "
    "first; if it still does not fit, the run stops (default: the config's "
    "max-context-tokens, else none).",
)
@context_report_option("Print the report of the last request.")
@agent_options
@tool_options("Dispatch this tool first; its result goes in the context.", "The --tool's input")
def run_command(
    task: tuple[str, ...],
    *,
    log: str | None,
    no_log: bool,
    log_settings: LogSettings,
    max_steps: int | None,
    system_prompt_file: str | None,
    max_context_tokens: int | None,
    context_report: bool,
    agent: AgentOptions,
    tool: str | None,
    tool_input: str | None,
) -> None:
    """Run the agent on TASK until it answers or reaches a limit.

    Every option may come before TASK as well as after it.

    Exit codes: 0 a final answer; 1 no final answer (step limit, model error, budget);
    2 usage errors; 130 interrupted.
    """
    task_text = " ".join(task).strip()
    if not task_text:
        raise click.UsageError("the task is empty")
    ctx = click.get_current_context()
    refuse_without(ctx, ("tool_input",), "--tool NAME", given=tool is not None)
    refuse_without_log(ctx, recorded=not no_log)
    manual = None
    if tool is not None:
        manual = (tool, parse_tool_input(read_tool_input(tool_input)))
    limits = {"max-steps": max_steps, "max-context-tokens": max_context_tokens}
    session = AgentSession(agent, log_settings, flags=limits)
    system_prompt = _system_prompt(system_prompt_file)
    transcript = session.transcript(log, no_log=no_log)
    tools = session.tools(transcript)
    if manual is not None and manual[0] not in tools:  # stopped before any model request
        raise UsageError(tools.unknown_tool_message(manual[0]))
    approver = session.approver()
    rules = load_project_rules(Path(session.workspace or os.curdir), Path.cwd(), warn=warn)
    config = AgentConfig(
        task=task_text,
        system_prompt=system_prompt,
        rules=rules,
        max_steps=session.settings["max-steps"],
        max_context_tokens=session.settings["max-context-tokens"],
        stream=session.stream,
        manual_tool=manual,
    )
    with session.log(transcript) as sink:  # a log that cannot be opened stops here
        session.say(f"Task: {task_text}", cut=True)
        session.say(f"Model provider: {session.provider.name}")
        loop = session.loop(sink, tools, approver, config)
        outcome = loop.run()
    session.finish(outcome, transcript)
    if context_report and outcome.last_request is not None and not agent.as_json:
        parts = request_parts(
            system_prompt, rules, loop.runtime.tools_snapshot, outcome.last_request.messages
        )
        click.echo("")
        echo(render_report(parts, outcome.last_input_tokens), nl=False)
    raise click.exceptions.Exit(session.exit_code(outcome, transcript))
