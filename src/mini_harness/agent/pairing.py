"""Every tool call paired with exactly one result: the rules a conversation must keep for
every provider to accept it (`check_history`), fresh ids for calls whose id is taken
(`unique_call_ids`, used by the loop at every step), and the result a call in doubt is
closed with when a run is continued.

Each tool call of a recorded run is ended (its recorded result is used, never run again),
in doubt (begun, never ended: the process died while it ran) or never begun. Reading the
transcript and planning the new run is replay's job (replay.continuing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from mini_harness.events import Message, ToolCall

INTERRUPTED_RESULT = (
    "Tool {name} was interrupted: the run ended before the call finished, so it may or may "
    "not have taken effect (closed by `mini-harness resume`)"
)
"""What a call in doubt is closed with, in the transcript and in the model's history."""


def unique_call_ids(message: Message, used: Iterable[str]) -> Message:
    """`message` with a fresh id for each tool call whose id is taken: used before (`used`,
    the ids of the conversation so far) or by an earlier call of the message. The fresh
    one is the id with `-2`, `-3`, ... added (the first not taken).

    A model may give two calls one id, or reuse one of an earlier step; a history with
    such duplicates is refused by providers (HTTP 400) at every later request, and a
    call's result would be matched to the wrong call.
    """
    taken = set(used)
    calls: list[ToolCall] = []
    for call in message.tool_calls:
        fresh, number = call.id, 2
        while fresh in taken:
            fresh, number = f"{call.id}-{number}", number + 1
        taken.add(fresh)
        calls.append(call if fresh == call.id else replace(call, id=fresh))
    if tuple(calls) == message.tool_calls:
        return message
    return replace(message, tool_calls=tuple(calls))


def call_ids(messages: Iterable[Message]) -> set[str]:
    """The ids of every tool call the assistant made in `messages`."""
    return {call.id for message in messages for call in message.tool_calls}


def check_history(messages: Sequence[Message]) -> list[str]:
    """What makes a conversation invalid for a provider (empty: valid).

    The rules every provider enforces: a system message comes first and only there; every
    tool call of an assistant message is followed, before any other message, by exactly
    one tool result with its id; a tool result answers a call of the assistant message
    just before it; no two tool calls of the conversation share an id.
    """
    problems: list[str] = []
    open_ids: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        where = f"message {index + 1} ({message.role})"
        if message.role == "system" and index != 0:
            problems.append(f"{where}: a system message after the first")
        if message.role == "tool":
            if message.tool_call_id in open_ids:
                open_ids.remove(message.tool_call_id)
            else:
                problems.append(f"{where}: result {message.tool_call_id!r} answers no open call")
            continue
        if open_ids:
            problems.append(f"{where}: {_calls(open_ids)} unanswered before it")
            open_ids = []
        if message.role == "assistant":
            open_ids = [call.id for call in message.tool_calls]
            for call_id in open_ids:
                if call_id in seen:
                    problems.append(f"{where}: tool call id {call_id!r} is used again")
                seen.add(call_id)
    if open_ids:
        problems.append(f"the history ends with {_calls(open_ids)} unanswered")
    return problems


def _calls(ids: list[str]) -> str:
    return f"{'tool call' if len(ids) == 1 else 'tool calls'} {', '.join(ids)}"
