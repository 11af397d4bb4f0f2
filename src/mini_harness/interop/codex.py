"""Codex rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`) read into
one imported run.

Two layouts: the current one, where every line is `{"timestamp", "type", "payload"}` and
`type` is session_meta, turn_context, response_item, event_msg or compacted; and the early
one, whose first line is the session's meta itself (`id`, `timestamp`, `instructions`,
`git`) and whose other lines are response items as they are (with `record_type: state`
lines between). The mapping is in docs/importing.md.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from mini_harness.events import (
    ImportSource,
    JsonValue,
    ModelIdentity,
    RunSettings,
    RunStarted,
    RunWorkspace,
    Usage,
    text_of,
)
from mini_harness.interop.build import ImportedRun, run_start
from mini_harness.interop.source import SourceFile

FORMAT = "codex"
_ENVELOPE = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
# Line types of later versions kept as they are, without a report: the environment the
# app describes to the model (`world_state`).
_KEPT = frozenset({"world_state"})
_RECENT = 16  # user messages remembered to find the event that repeats each
# Events that repeat the response item that follows them: the answer's text, the
# reasoning's summary. Held until that item comes (at most _HELD of them).
_ECHOES = ("agent_message", "agent_reasoning")
_HELD = 64
# How the messages Codex writes as the user's before a person's prompt begin: the
# environment, the sandbox's permissions, the instructions files (AGENTS.md), the
# notice of an interrupted turn. None of them is what was asked.
_PREAMBLES = (
    "<environment_context>",
    "<permissions instructions>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<turn_aborted>",
)


def looks_like(first: dict[str, Any]) -> bool:
    """Whether the first line of a file is a Codex rollout's."""
    if first.get("type") in _ENVELOPE and "payload" in first:
        return True
    return isinstance(first.get("id"), str) and "instructions" in first and "uuid" not in first


def _head(value: Any) -> str | None:
    if (
        isinstance(value, str)
        and len(value) in (40, 64)
        and all(c in "0123456789abcdef" for c in value)
    ):
        return value
    return None


def _counts(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(input, output, cached input) tokens of a Codex TokenUsage."""
    return tuple(  # type: ignore[return-value]
        value if type(value) is int else 0
        for value in (
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            usage.get("cached_input_tokens"),
        )
    )


class CodexReader:
    """Read one rollout into events (see the module)."""

    def __init__(self, source: SourceFile, run: ImportedRun | None, make_run: Any) -> None:
        self.source = source
        self.run = run
        self._make_run = make_run  # (meta, first ts) -> ImportedRun
        self._total: tuple[int, int, int] | None = None  # the last cumulative usage
        self._said: list[str] = []  # user messages not yet repeated by a user_message event
        self._held: list[tuple[int, Any, dict[str, Any]]] = []  # echoes: number, ts, line
        self._answer: str | None = None  # the model's last answer since the user spoke

    def read(self) -> ImportedRun | None:
        for number, line in self.source:
            if (number == 1 or self.run is None) and self._opening(number, line):
                continue
            if "payload" in line and isinstance(line.get("type"), str):
                self._item(number, line["type"], line["payload"], line.get("timestamp"), line)
            elif line.get("record_type") == "state":
                self._keep(number, "state", line.get("timestamp"), line)
            elif isinstance(line.get("type"), str):  # the early layout: a response item
                self._response_item(number, line, line.get("timestamp"), line)
            else:
                self.source.problem(number, "no `type`: not a rollout line")
        if self.run is not None:
            self._release(None)
            self.run.finish()
        return self.run

    # --- the session -------------------------------------------------------------------

    def _opening(self, number: int, line: dict[str, Any]) -> bool:
        """Start the run from the session's meta (either layout); True when the line was
        the meta."""
        if line.get("type") == "session_meta" and isinstance(line.get("payload"), dict):
            meta = line["payload"]
        elif "payload" not in line and isinstance(line.get("id"), str) and "type" not in line:
            meta = line  # the early layout's first line
        else:
            if self.run is None:
                self.source.problem(number, "the rollout has no session_meta before this line")
                self.run = self._make_run({}, line.get("timestamp"))
            return False
        if self.run is None:
            self.run = self._make_run(meta, line.get("timestamp"))
        else:
            self._keep(number, "session_meta", line.get("timestamp"), line)
        return True

    def _item(self, number: int, kind: str, payload: Any, ts: Any, line: dict[str, Any]) -> None:
        if not isinstance(payload, dict):
            self.source.problem(number, f"{kind}: `payload` is not an object")
            self._keep(number, kind, ts, line)
            return
        if kind == "response_item":
            self._response_item(number, payload, ts, line)
        elif kind == "event_msg":
            if payload.get("type") == "token_count":
                self._token_count(number, payload, ts, line)
            elif payload.get("type") == "user_message":
                self._user_message(number, payload, ts, line)
            elif payload.get("type") == "task_complete":
                self._task_complete(number, payload, ts, line)
            elif payload.get("type") in _ECHOES:
                self._held.append((number, ts, line))
                if len(self._held) > _HELD:  # no item repeats them: kept as they are
                    number, ts, line = self._held.pop(0)
                    self._keep(number, f"event_msg/{line['payload'].get('type')}", ts, line)
            else:
                self._keep(number, f"event_msg/{payload.get('type')}", ts, line)
        elif kind == "turn_context":
            self._turn_context(payload, ts, number, line)
        elif kind == "compacted":
            assert self.run is not None
            message = payload.get("message")
            self.run.compacted(_ts(ts, self.run), message if isinstance(message, str) else None)
        elif kind == "session_meta" or kind in _KEPT:
            self._keep(number, kind, ts, line)
        else:
            self.source.problem(number, f"unknown line type {kind!r}: kept, not modelled")
            self._keep(number, kind, ts, line)

    def _user_message(self, number: int, payload: dict[str, Any], ts: Any, line: Any) -> None:
        """The event that repeats a user's message the rollout recorded as a response item
        (the text is in the run once, as that message); what else it says (images, ids)
        is kept without the text. An event repeating no message is kept whole."""
        text = payload.get("message")
        if not isinstance(text, str) or text not in self._said:
            self._keep(number, "event_msg/user_message", ts, line)
            return
        self._said.remove(text)
        rest = {k: v for k, v in payload.items() if k not in ("type", "message") and v}
        if rest:
            kept = dict(line)
            kept["payload"] = {"type": "user_message", **rest}
            self._keep(number, "event_msg/user_message", ts, kept)

    def _task_complete(self, number: int, payload: dict[str, Any], ts: Any, line: Any) -> None:
        """The end of a turn, kept as it was, but for the answer it repeats
        (`last_agent_message`: the model's last answer is in the run once, as its
        message)."""
        if payload.get("last_agent_message") is not None and (
            payload["last_agent_message"] == self._answer
        ):
            rest = {k: v for k, v in payload.items() if k != "last_agent_message"}
            line = {**line, "payload": rest}
        self._keep(number, "event_msg/task_complete", ts, line)

    def _turn_context(self, payload: dict[str, Any], ts: Any, number: int, line: Any) -> None:
        run = self.run
        assert run is not None
        model = payload.get("model")
        if not run.started:  # the first turn's settings are the run's
            if isinstance(model, str):
                known = run.start.model
                provider = known.provider if known is not None else "codex"
                run.amend(model=ModelIdentity(provider, model))
            approval = payload.get("approval_policy")
            if isinstance(approval, str):
                run.amend(settings=RunSettings(approval))
        self._keep(number, "turn_context", ts, line)  # the settings per turn, as they were

    def _token_count(self, number: int, payload: dict[str, Any], ts: Any, line: Any) -> None:
        run = self.run
        assert run is not None
        info = payload.get("info", payload)  # early versions: the counts themselves
        if info is None:
            return  # rate limits only
        if not isinstance(info, dict):
            self.source.problem(number, "token_count: `info` is not an object")
            return
        window = info.get("model_context_window")
        if type(window) is int:
            run.context_window = window
        total = info.get("total_token_usage")
        if isinstance(total, dict):  # cumulative: what this count adds to the last
            now = _counts(total)
            before = self._total or (0, 0, 0)
            self._total = now
            delta = tuple(a - b for a, b in zip(now, before, strict=True))
        elif "input_tokens" in info:  # early versions: the turn's own counts
            delta = _counts(info)
        else:
            self.source.problem(number, "token_count: no total_token_usage")
            return
        if any(delta):
            run.add_usage(Usage(delta[0], delta[1], delta[2]))

    # --- response items ----------------------------------------------------------------

    def _release(self, item: dict[str, Any] | None) -> None:
        """The events held before `item` (None: the rollout ended): one that repeats it
        (an answer's text, the summary of reasoning) adds nothing but what else it says
        (a `phase`), kept without the text; one its item did not repeat, or still held
        when the user speaks again, is kept whole. The others wait for their item."""
        if not self._held:
            return
        kind = item.get("type") if item is not None else None
        role = item.get("role") if item is not None else None
        pairs = None
        texts: list[str] = []
        if item is not None and kind == "message" and role == "assistant":
            pairs, texts = "agent_message", [_content_text(item.get("content"))]
        elif item is not None and kind == "reasoning":
            summary = item.get("summary")
            blocks = summary if isinstance(summary, list) else []
            pairs = "agent_reasoning"
            texts = [b["text"] for b in blocks if isinstance(b, dict) and "text" in b]
        ends = item is None or (kind == "message" and role != "assistant")
        held, self._held = self._held, []
        for number, ts, line in held:
            payload = line["payload"]
            echo = payload.get("type")
            if echo != pairs and not ends:
                self._held.append((number, ts, line))  # its item is still to come
                continue
            text = payload.get("message", payload.get("text"))
            if echo != pairs or text not in texts:
                self._keep(number, f"event_msg/{echo}", ts, line)
                continue
            texts.remove(text)
            rest = {k: v for k, v in payload.items() if k not in ("message", "text") and v}
            if set(rest) - {"type"}:
                self._keep(number, f"event_msg/{echo}", ts, {**line, "payload": rest})

    def _response_item(self, number: int, item: dict[str, Any], ts: Any, line: Any) -> None:
        run = self.run
        assert run is not None
        self._release(item)
        at = _ts(ts, run)
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = _content_text(item.get("content"))
            if role == "assistant":
                run.output_text(at, text)
                self._answer = text
            elif role in ("user", "developer", "system"):
                self._answer = None
                prompt = role == "user" and not text.lstrip().startswith(_PREAMBLES)
                run.user(at, text, prompt=prompt)
                if role == "user":
                    self._said = [*self._said[-(_RECENT - 1) :], text]
            else:
                self.source.problem(number, f"message of unknown role {role!r}: kept")
                self._keep(number, "message", ts, line)
        elif kind == "reasoning":
            run.output_text(at, "")  # the model's turn, its reasoning kept as it was
            self._keep(number, "reasoning", ts, line)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(number, kind, item, at, line)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(number, item, at, line)
        elif kind == "web_search_call":
            self._web_search(number, item, at)
        else:
            self._keep(number, f"response_item/{kind}", ts, line)

    def _call(self, number: int, kind: str, item: dict[str, Any], at: str, line: Any) -> None:
        run = self.run
        assert run is not None
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str):
            self.source.problem(number, f"{kind} without a call_id: kept, not a call")
            self._keep(number, kind, at, line)
            return
        tool_input: JsonValue
        if kind == "function_call":
            name = item.get("name")
            arguments = item.get("arguments")
            arguments = (
                arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
            )
            try:
                tool_input = orjson.loads(arguments)
            except orjson.JSONDecodeError:
                tool_input = arguments
        elif kind == "custom_tool_call":
            name = item.get("name")
            raw = item.get("input")
            tool_input = raw if isinstance(raw, str) else text_of(raw)
            arguments = tool_input
        else:
            name = "local_shell"
            tool_input = item.get("action")
            arguments = orjson.dumps(tool_input).decode()
        if not isinstance(name, str):
            self.source.problem(number, f"{kind} without a name: kept, not a call")
            self._keep(number, kind, at, line)
            return
        run.output_call(at, call_id, name, tool_input, arguments)

    def _web_search(self, number: int, item: dict[str, Any], at: str) -> None:
        """A search the provider ran within the model's response: a `web_search` call (its
        `action` the input) ended by its own line (`status`: completed, else failed; one
        still in progress stays in doubt), the response going on."""
        run = self.run
        assert run is not None
        call_id = item.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else f"web_search:{number}"
        action = item.get("action")
        tool_input: JsonValue = action if isinstance(action, dict) else {}
        run.output_call(at, call_id, "web_search", tool_input, orjson.dumps(tool_input).decode())
        status = item.get("status")
        if isinstance(status, str) and status != "in_progress":  # else: in doubt
            failed = status != "completed"
            run.result(at, call_id, {"status": status}, is_error=failed, answered=False)

    def _output(self, number: int, item: dict[str, Any], at: str, line: Any) -> None:
        run = self.run
        assert run is not None
        call_id = item.get("call_id")
        output = item.get("output")
        is_error = False
        if isinstance(output, dict):  # {content, success}
            is_error = output.get("success") is False
            output = output.get("content", output)
        code = exit_code(output) if isinstance(output, str) else None
        if code is not None:  # a command: its exit code a field, as run_command records it
            output = {"exitCode": code, "text": output}
        if not isinstance(call_id, str) or not run.result(at, call_id, output, is_error=is_error):
            self.source.problem(number, f"output for no call of this session ({call_id!r})")
            self._keep(number, str(item.get("type")), at, line)

    def _keep(self, number: int, kind: str, ts: Any, line: Any) -> None:
        assert self.run is not None
        self.run.keep(ts if isinstance(ts, str) else None, number, kind, line)


# The header Codex writes above a command's output (`shell`, `shell_command`,
# `exec_command`, `write_stdin`): the line that gives the exit code.
_EXIT_LINE = re.compile(r"(?:Exit code: |Process exited with code )(-?\d+)")
_OUTPUT_LINE = re.compile(r"^Output:$", re.MULTILINE)


def exit_code(text: str) -> int | None:
    """The exit code a command's output text reports in the header above its `Output:`
    line (None: it reports none, as for a command still running)."""
    found = _OUTPUT_LINE.search(text)
    if found is None:
        return None
    for row in text[: found.start()].splitlines():
        match = _EXIT_LINE.fullmatch(row.strip())
        if match:
            return int(match.group(1))
    return None


def _ts(ts: Any, run: ImportedRun) -> str:
    return ts if isinstance(ts, str) and ts else run.last_ts


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return text_of(content)


def start_of(meta: dict[str, Any], ts: Any, *, run_id: str, imported: ImportSource) -> RunStarted:
    """What a rollout's session meta says of its run."""
    git: dict[str, Any] = meta["git"] if isinstance(meta.get("git"), dict) else {}
    cwd = meta.get("cwd")
    workspace = None
    if isinstance(cwd, str) and cwd:
        branch = git.get("branch")
        workspace = RunWorkspace(
            cwd, _head(git.get("commit_hash")), branch if isinstance(branch, str) else None
        )
    provider = meta.get("model_provider")
    model = ModelIdentity(provider, "") if isinstance(provider, str) else None
    instructions = meta.get("instructions")
    version = meta.get("cli_version")
    started = meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else ts
    return run_start(
        run_id,
        started if isinstance(started, str) else "",
        f"codex {version}" if isinstance(version, str) else "codex",
        imported,
        model=model,
        system_prompt=instructions if isinstance(instructions, str) else None,
        workspace=workspace,
        settings=RunSettings("imported"),
    )
