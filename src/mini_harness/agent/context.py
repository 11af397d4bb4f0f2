"""The context builder: what each model request is made of, and what the budget may drop.

A request is built from labelled parts, in this order: System prompt, Project rules
(`AGENTS.md` files), Tool definitions, Conversation, and Tool result when a tool was run
before the task (`--tool`). Each part has a token estimate (ceil(characters / 4)); the
Context Explorer report and the `--max-context-tokens` budget both use these estimates, and
replay rebuilds them from the events with the same functions.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from msgspec.structs import replace

from mini_harness.agent.providers import ModelRequest
from mini_harness.errors import FileRefusedError
from mini_harness.events import (
    JsonValue,
    Message,
    ProjectRules,
    ReplacedMessage,
    ToolDefinition,
    to_wire,
)
from mini_harness.events.measure import RequestHasher, estimate_tokens
from mini_harness.runtime.confined import read_confined
from mini_harness.runtime.context_report import (
    ContextPart,
    pretty_json,
    render_context_report,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are mini-harness, a coding agent working in a local workspace. Use the tools to "
    "look at files when the task needs it, then answer concisely. When you have the "
    "answer, reply with text only (no tool call)."
)
RULES_FILE_NAME = "AGENTS.md"
MAX_RULES_BYTES = 256 * 1024
"""The largest project rules file read (256 KiB); a larger one is skipped with a warning."""
MANUAL_TOOL_RESULT_PREFIX = "Result of the tool run before this task:\n"
"""The user message that carries a `--tool` result starts with this (the report shows it
as the Tool result part)."""
TRIMMED_PREFIX = "[tool result trimmed to fit the context budget:"


def load_project_rules(
    workspace: Path, cwd: Path | None = None, *, warn: Callable[[str], None] | None = None
) -> tuple[ProjectRules, ...]:
    """AGENTS.md at the workspace root, then in each directory down to `cwd` (nearer last).

    Directories outside the workspace are not read. A rules file must be a regular file of
    at most MAX_RULES_BYTES of UTF-8 text, inside the workspace (a symlink to a file in it
    is followed, one leading out is not); any other is skipped and `warn` told why.
    """
    root = workspace.resolve()
    here = (cwd or root).resolve()
    below = here.relative_to(root).parts if here.is_relative_to(root) else ()
    found = []
    for depth in range(len(below) + 1):
        candidate = root.joinpath(*below[:depth], RULES_FILE_NAME)
        shown = candidate.relative_to(root).as_posix()
        try:
            data = _read_rules_file(candidate, root)
            if data is None:
                continue
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, FileRefusedError) as exc:
            if warn is not None:
                warn(f"project rules {shown} skipped: {_not_read(exc)}")
            continue
        found.append(
            ProjectRules(path=shown, sha256=hashlib.sha256(data).hexdigest(), content=text)
        )
    return tuple(found)


def _read_rules_file(candidate: Path, root: Path) -> bytes | None:
    """The bytes of one rules file, None when there is none; OSError when it cannot be
    read, FileRefusedError when it may not (read_confined: no link followed, no FIFO
    waited on, a regular file inside `root`, up to MAX_RULES_BYTES)."""
    try:
        os.lstat(candidate)
    except FileNotFoundError:
        return None
    return read_confined(os.path.realpath(candidate), str(root), MAX_RULES_BYTES)


def _not_read(exc: OSError | UnicodeDecodeError | FileRefusedError) -> str:
    """Why a rules file was skipped, as the warning says it."""
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if exc.outside:
        return "a symlink leading outside the workspace"
    if exc.kind is not None:
        return "not a regular file"
    return f"{exc.size:,} bytes, more than the {MAX_RULES_BYTES:,} bytes project rules may have"


def rules_text(rules: Sequence[ProjectRules]) -> str:
    """The rules as the model is shown them (after the system prompt)."""
    return "\n\n".join(
        f"Project rules from {rule.path}:\n{rule.content.rstrip()}" for rule in rules
    )


def system_message(system_prompt: str, rules: Sequence[ProjectRules]) -> Message:
    """The first message of every agent request: the system prompt, then the rules."""
    text = rules_text(rules)
    return Message("system", f"{system_prompt}\n\n{text}" if text else system_prompt)


def manual_tool_message(result: JsonValue) -> Message:
    """The user message carrying the result of a tool run before the task."""
    return Message("user", MANUAL_TOOL_RESULT_PREFIX + pretty_json(result))


def render_message(message: Message) -> str:
    """One message as the Conversation part shows it: `role: content`, then its calls."""
    head = f"{message.role} ({message.name})" if message.role == "tool" else message.role
    lines = [f"{head}: {message.content}"]
    lines.extend(f"tool call {call.name}({call.arguments})" for call in message.tool_calls)
    return "\n".join(lines)


def request_parts(
    system_prompt: str,
    rules: Sequence[ProjectRules],
    tools: Sequence[ToolDefinition],
    messages: Sequence[Message],
) -> list[ContextPart]:
    """The labelled parts of a request, in the report's order (empty parts left out)."""
    conversation = []
    tool_result = None
    for message in messages[1:]:  # messages[0] is the system message
        if message.role == "user" and message.content.startswith(MANUAL_TOOL_RESULT_PREFIX):
            tool_result = message.content[len(MANUAL_TOOL_RESULT_PREFIX) :]
        else:
            conversation.append(render_message(message))
    parts = [ContextPart("System prompt", system_prompt)]
    if rules:
        parts.append(ContextPart("Project rules", rules_text(rules)))
    parts.append(ContextPart("Tool definitions", pretty_json(to_wire(tools))))
    parts.append(ContextPart("Conversation", "\n\n".join(conversation)))
    if tool_result is not None:
        parts.append(ContextPart("Tool result", tool_result))
    return parts


def context_report(parts: Sequence[ContextPart], provider_input_tokens: int | None) -> str:
    """The Context Explorer block, plus the provider's own count of input tokens if known."""
    report = render_context_report(parts)
    if provider_input_tokens is not None:
        report += f"{'Provider input tokens':<22} {provider_input_tokens:,} tokens\n"
    return report


def request_hash(request: ModelRequest) -> str:
    """SHA-256 (64 hex digits) of the canonical request (see RequestHasher)."""
    hasher = RequestHasher()
    hasher.add(request.messages)
    return hasher.hexdigest(request.params, request.tools)


@attrs.frozen
class Trim:
    """What the budget did to a conversation: the new messages and the replaced entries."""

    messages: tuple[Message, ...]
    replaced: tuple[ReplacedMessage, ...]
    tokens_before: int
    tokens_after: int  # when it does not fit: the least the request can be made to take
    fits: bool = True


def trim_to_budget(
    messages: Sequence[Message],
    *,
    system_prompt: str,
    rules: Sequence[ProjectRules],
    tools: Sequence[ToolDefinition],
    budget: int,
    trimmable_before: int,
) -> Trim:
    """Replace the oldest tool results by placeholders until the request fits `budget`.

    Only tool results before `trimmable_before` (already sent, so outside the latest turn)
    may go; the system prompt, rules, user messages and assistant messages never do.
    A Trim with nothing replaced when it already fits; one that does not `fit` (every
    result it could trim trimmed: `tokens_after` is the least the request needs) when it
    cannot be made to.
    """

    def request_tokens(current: Sequence[Message]) -> int:
        return sum(part.tokens for part in request_parts(system_prompt, rules, tools, current))

    current = list(messages)
    before = tokens = request_tokens(current)
    replaced: list[ReplacedMessage] = []
    trimmable = (
        index
        for index, message in enumerate(messages[:trimmable_before])
        if message.role == "tool" and not message.content.startswith(TRIMMED_PREFIX)
    )
    while tokens > budget:
        index = next(trimmable, None)
        if index is None:
            return Trim(tuple(current), tuple(replaced), before, tokens, fits=False)
        message = current[index]
        dropped = estimate_tokens(message.content)
        placeholder = f"{TRIMMED_PREFIX} ~{dropped:,} tokens of {message.name or 'tool'} output]"
        current[index] = replace(message, content=placeholder)
        replaced.append(
            ReplacedMessage(index, message.tool_call_id, message.name, dropped, placeholder)
        )
        tokens = request_tokens(current)
    return Trim(tuple(current), tuple(replaced), before, tokens)
