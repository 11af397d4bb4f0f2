"""The conversation as the events record it: messages, tool calls, usage, project rules,
the model, origin, workspace and settings of a run, a model failure, a trimmed message,
and the tool definitions a model is shown.

Declared once, like the events that carry them (msgspec Structs: events/wire.py
`Declared`): the agent layer builds its requests from these classes, the one encoder
(events/wire.py) writes them and the one decoder (transcripts/fields.py) reads them, so a
recorded message that does not fit its declaration is a problem of its line, never a
surprise for a reader. The wire keys are the fields in camelCase; what is left out when
unset is said per class (`wire_rules`, see wire.py).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import orjson
from msgspec.structs import force_setattr

from mini_harness.events.jsonvalue import JsonObject, JsonValue
from mini_harness.events.wire import KEEP_NULL, OMIT_DEFAULT, Declared

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(Declared, frozen=True):
    """A tool call as the model made it: its id, the tool's name, the raw argument text.

    `arguments` is exactly what the model sent (usually a JSON object's text, but it may
    not parse); the loop decodes and validates it, the transcript keeps it verbatim.
    """

    id: str
    name: str
    arguments: str


class Message(Declared, frozen=True):
    """One message of a conversation.

    - system / user: `content` is the text.
    - assistant: `content` is its text ("" when it only called tools), `tool_calls` its calls.
    - tool: the result of the call `tool_call_id` (of tool `name`), as text; `is_error`
      when the call failed (the text then says why).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    wire_rules: ClassVar = {"tool_calls": OMIT_DEFAULT, "is_error": OMIT_DEFAULT}


def text_of(value: Any) -> str:
    """Content as the text a model reads, as another agent's session records it: a string
    as it is, a block (an object with a `text`) as its text, a list of blocks as their
    texts joined, anything else as its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(text := value.get("text"), str):
        return text
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(orjson.dumps(block).decode())
        return "\n".join(parts)
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def tool_result_message(
    call: ToolCall,
    *,
    output: JsonValue = None,
    error: str | None = None,
    imported: bool = False,
) -> Message:
    """The tool result message a model reads for `call`, the one way to make it: when the
    call failed, `error` (the message its ToolFailed records, word for word); else its
    output as compact JSON, or, for a call imported from another agent's session
    (`imported`), the output as that agent gave it to its model (`text_of`: its text as
    it is, not quoted)."""
    if error is not None:
        return Message("tool", error, tool_call_id=call.id, name=call.name, is_error=True)
    content = text_of(output) if imported else orjson.dumps(output).decode()
    return Message("tool", content, tool_call_id=call.id, name=call.name)


def _plus(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


class Usage(Declared, frozen=True):
    """Token counts as the provider reported them (None: not reported, written as null)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    wire_rules: ClassVar = {
        "input_tokens": KEEP_NULL,
        "output_tokens": KEEP_NULL,
        "cached_tokens": KEEP_NULL,
    }

    def __add__(self, more: Usage) -> Usage:
        """Both counts summed; a count nobody reported stays None."""
        return Usage(
            _plus(self.input_tokens, more.input_tokens),
            _plus(self.output_tokens, more.output_tokens),
            _plus(self.cached_tokens, more.cached_tokens),
        )


class ModelFailure(Declared, frozen=True):
    """Why one attempt at a model request failed (ModelFailed.error): `kind` is a model
    error kind, `status` the HTTP status (None without one), `message` what a person reads."""

    kind: str
    status: int | None
    message: str


class ReplacedMessage(Declared, frozen=True):
    """One message the context budget replaced (ContextTrimmed.replaced): its `index` in
    the conversation, the tool call and tool it was the result of, the estimated `tokens`
    dropped, and the placeholder `content` now in its place."""

    index: int
    tool_call_id: str | None
    name: str | None
    tokens: int
    content: str


class ProjectRules(Declared, frozen=True):
    """One AGENTS.md file: its workspace-relative path, the SHA-256 of its bytes, its text."""

    path: str
    sha256: str
    content: str


class ModelIdentity(Declared, frozen=True):
    """The model of an agent run: its provider (as printed after "Model provider:") and the
    model's own name."""

    provider: str
    name: str


class RunOrigin(Declared, frozen=True):
    """The run (and step) an agent run continues (`resumedFrom`) or branches off
    (`forkedFrom`)."""

    run_id: str
    step: int


class CallOrigin(Declared, frozen=True):
    """The call a run acts on: the apply_patch call an undo run reverts (`undoes`)."""

    run_id: str
    call_id: str


class ImportSource(Declared, frozen=True):
    """Where an imported run came from (RunStarted.imported): another agent's session file
    read into events by `mini-harness import`. `format` is `codex` or `claude`,
    `format_version` what the file says of its writer's version (None: it says nothing),
    `path` the file as given, `sha256` and `size` its bytes (compressed, as on disk),
    `session_id` the session's own id, `importer` the mini-harness version that read it,
    and `part` the file's part of the session when the session spans several files (a
    subagent's file: `subagents/agent-<id>.jsonl`; None for the session's own file)."""

    format: str
    path: str
    sha256: str
    size: int
    importer: str
    format_version: str | None = None
    session_id: str | None = None
    part: str | None = None


class RunWorkspace(Declared, frozen=True):
    """Where an agent run worked: the workspace's absolute `path` and, when it is a git
    repository, the commit checked out (`head`, 40 or 64 hex digits; None before the
    first commit) and the branch (None when HEAD is detached)."""

    path: str
    head: str | None = None
    branch: str | None = None


class RunSettings(Declared, frozen=True):
    """The settings an agent run started with, beside those RunStarted records on its own
    (`model`, `maxSteps`, `policySha256`): the approval mode (`--approve`), the context
    budget (`--max-context-tokens`, None: none) and whether commands had to run in the
    sandbox (`require-sandbox`)."""

    approve: str
    max_context_tokens: int | None = None
    require_sandbox: bool = False

    wire_rules: ClassVar = {"require_sandbox": OMIT_DEFAULT}


class ToolAnnotations(Declared, frozen=True):
    """Behaviour hints in MCP's vocabulary (in the order MCP documents them); None means
    "not said"."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    @property
    def safe_to_repeat(self) -> bool:
        """True when re-running the tool cannot change the world (read-only or idempotent)."""
        return bool(self.read_only_hint or self.idempotent_hint)


def _said(annotations: ToolAnnotations | None) -> ToolAnnotations | None:
    """Hints that say nothing are no hints: a definition without them is written without
    `annotations`, as one that never had any."""
    return None if annotations == ToolAnnotations() else annotations


class ToolDefinition(Declared, frozen=True):
    """A tool as a model sees it: name, description, input schema (JSON Schema), and
    optionally an output schema and hints. RunStarted records one per registered tool."""

    name: str
    description: str
    input_schema: JsonObject
    output_schema: JsonObject | None = None
    annotations: ToolAnnotations | None = None

    def __post_init__(self) -> None:
        if self.annotations is not None and _said(self.annotations) is None:
            force_setattr(self, "annotations", None)
