"""`mini-harness resume` and `mini-harness fork`: continue or branch a recorded agent run.

Both append a new run to a transcript that names the run it came from (`resumedFrom` or
`forkedFrom`, with the step); the run it came from is never changed, except that resume
closes its calls in doubt as `interrupted`.
"""

from __future__ import annotations

import functools

import attrs
import click

from mini_harness.cli.coding import accept_policy_option
from mini_harness.cli.log_options import LogSettings, log_option, log_options, warn_quarantined
from mini_harness.cli.options import (
    max_steps_option,
    number_option,
    option_group,
    root_workspace,
    run_option,
)
from mini_harness.cli.session import AgentOptions, AgentSession, agent_options
from mini_harness.cli.stored import acting_workspace, last_option, locate, notice
from mini_harness.cli.verified import acted_on, allow_unverified_option, read_verified
from mini_harness.events import EventSink
from mini_harness.replay.continuing.call_by_call import safe_to_repeat
from mini_harness.replay.continuing.plans import (
    fork_opening,
    resume_plan,
    steps_before,
)
from mini_harness.replay.history import Run, select_agent_run
from mini_harness.transcripts import JsonlTranscript

_continue_options = option_group(
    last_option("agent run"),
    run_option("the last agent run of the transcript (or the run an id names)"),
    max_steps_option("the run's own"),
    agent_options,
    allow_unverified_option,
    accept_policy_option,
    log_options,
)
"""The options of resume and fork: which run, its step limit, and those of `run`."""


def _located(
    command: str,
    path: str | None,
    text: str | None,
    *,
    last: bool,
    run: str | None,
    agent: AgentOptions,
) -> tuple[str, str | None, str | None]:
    """The transcript, the run (`--run`, else the one an id or --last named) and the text
    (FOLLOW_UP, INSTRUCTION) of a resume or a fork (`command`). With --last, the one word
    given is the text. The transcript must be a regular file: the new run is appended to
    it (a fork's, without --log), and it is verified in the reading of its history."""
    if last and text is None:
        path, text = None, path
    found = locate(path, last=last, agent=True, workspace=agent.workspace or root_workspace())
    acted_on(found.path, command)
    return found.path, run or found.run_id, text


def _workspace(agent: AgentOptions, found: Run | None) -> str | None:
    """Where the continued run works: --workspace, else where the run it continues
    (`found`) worked (said when that is not here), else the current directory (None)."""
    say = functools.partial(notice, as_json=agent.as_json)
    return acting_workspace(agent.workspace, found, say)


@click.command("resume", short_help="Continue an agent run as a new run that names it.")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.argument("follow_up", required=False)
@_continue_options
@click.option(
    "--retry-in-doubt",
    is_flag=True,
    help="Run a call in doubt again if its tool is read-only or idempotent (default: the "
    "model is told it was interrupted).",
)
def resume_command(
    path: str | None,
    follow_up: str | None,
    *,
    last: bool,
    run: str | None,
    max_steps: int | None,
    agent: AgentOptions,
    allow_unverified: bool,
    log_settings: LogSettings,
    retry_in_doubt: bool,
) -> None:
    """Continue an agent run of the transcript PATH, as a new run appended to it. PATH may
    be a run's id (or a prefix of it) recorded in the session store; --last takes the
    newest agent run of the workspace. The run works where the run it continues worked,
    unless --workspace says otherwise.

    Finished tool calls are never run again; a call in doubt (the process died while it
    ran) is recorded as interrupted and the model is told so; a request in doubt is sent
    again. FOLLOW_UP adds a user message (a run that ended with an answer can go on). A
    run is continued once (fork branches it again), and only from a transcript that
    verifies.

    Exit codes: as `run` (0 a final answer, 1 none, 2 usage, 130 interrupted).
    """
    path, run, follow_up = _located("resume", path, follow_up, last=last, run=run, agent=agent)
    read = read_verified(path, "resume", allow=allow_unverified)  # the one reading
    history, unverified = read.history, read.unverified
    found = select_agent_run(history, run)
    session = AgentSession(
        agent, log_settings, workspace=_workspace(agent, found), continuing=found
    )
    registry = session.tools(path)
    with session.log(path) as log:
        transcript = _recovered(log)  # a torn tail after the events read
        runs = [each for each in history.runs if each.is_agent]
        approver = session.approver(continuing=found)

        def repeatable(name: str) -> bool:  # a tool that is gone is not run again
            known = registry.get(name) is not None
            return retry_in_doubt and known and safe_to_repeat(registry, name)

        plan = resume_plan(runs, found, follow_up=follow_up, retry_in_doubt=repeatable)
        opening = attrs.evolve(plan.opening, unverified=unverified)
        origin = opening.resumed_from
        what = f"Resuming run {found.run_id} after step {origin.step if origin else None}"
        what += _of_the_conversation(found, runs, origin.step if origin else 0)
        # Its RunStarted claims the run, under the file's lock, before anything is done:
        # no other run resumed it, nor went on with what the plan was read from, since
        # the events read ended.
        sink = transcript.continuing(found.run_id, since=read.end, read=plan.read)
        code = session.continue_run(
            sink, registry, approver, found, opening, transcript=path, what=what,
            task=follow_up, max_steps=max_steps, closing=plan.closing_events(),
        )  # fmt: skip
        raise click.exceptions.Exit(code)  # inside: the log knows how the command ended


@click.command("fork", short_help="Branch an agent run off before a step, as a new run.")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.argument("instruction", required=False)
@number_option(
    "--at-step",
    required=True,
    help_text="Branch off before step N's model request (N counts the run's model requests "
    "from 1; a step it did not make is an error naming the steps it made).",
)
@_continue_options
@log_option("appended to PATH")
def fork_command(
    path: str | None,
    instruction: str | None,
    *,
    at_step: int,
    last: bool,
    run: str | None,
    max_steps: int | None,
    agent: AgentOptions,
    allow_unverified: bool,
    log_settings: LogSettings,
    log: str | None,
) -> None:
    """Start a new run from an agent run of PATH as it stood before step N's request.

    INSTRUCTION adds a user message. The new run records `forkedFrom` (run id and step);
    the original run is not changed. It is appended to PATH, or written to --log OUT. PATH
    may be a run's id (or a prefix of it) recorded in the session store; --last takes the
    newest agent run of the workspace. The fork works where the run worked, unless
    --workspace says otherwise.

    Exit codes: as `run` (0 a final answer, 1 none, 2 usage, 130 interrupted).
    """
    path, run, instruction = _located("fork", path, instruction, last=last, run=run, agent=agent)
    read = read_verified(path, "fork", allow=allow_unverified)  # the one reading
    history, unverified = read.history, read.unverified
    found = select_agent_run(history, run)
    opening = fork_opening(found, at_step, instruction, history.runs)
    opening = attrs.evolve(opening, unverified=unverified)
    session = AgentSession(
        agent, log_settings, workspace=_workspace(agent, found), continuing=found
    )
    approver = session.approver(continuing=found)
    registry = session.tools(path, log)
    target = log or path
    with session.log(target) as sink:
        what = f"Forking run {found.run_id} before step {at_step}"
        what += _of_the_conversation(found, history.runs, at_step)
        code = session.continue_run(
            sink, registry, approver, found, opening, transcript=target, what=what,
            task=instruction, max_steps=max_steps,
        )  # fmt: skip
        raise click.exceptions.Exit(code)


def _of_the_conversation(run: Run, runs: list[Run], step: int) -> str:
    """For a run that continues another, what its `step` is in the conversation: the
    steps printed go on from the run it continues (steps_before), while each run's record,
    `show` and `--at-step` count its own from 1."""
    before = steps_before(run, runs)
    return f" (step {before + step} of the conversation)" if before else ""


def _recovered(log: EventSink) -> JsonlTranscript:
    """The log, its torn tail set aside (and said so)."""
    if not isinstance(log, JsonlTranscript):  # opened_log with a path gives one
        raise TypeError(f"not a transcript: {log!r}")
    log.recover()
    warn_quarantined(log)
    return log
