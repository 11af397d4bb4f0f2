"""Claude Code session files (`~/.claude/projects/<dir>/<session>.jsonl`, subagents in
`<session>/subagents/agent-*.jsonl`) read into imported runs.

Every line is an object with a `type`: `user` and `assistant` lines carry the conversation
(`message`, as the Messages API has it), linked into a tree by `uuid`/`parentUuid`;
assistant lines that share one `message.id` are one model response written block by
block; `isSidechain` lines are a subagent's conversation (older versions keep them in
the session's own file, newer ones in the subagents directory). The others (`summary`,
`system`, `file-history-snapshot`, `progress`, `queue-operation`, ...) are bookkeeping,
kept as they are. The mapping is in docs/importing.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from mini_harness.events import ModelIdentity, RunOrigin, Usage
from mini_harness.interop.build import ImportedRun, RunStart
from mini_harness.interop.source import SourceFile

FORMAT = "claude"
CONVERSATION = ("user", "assistant")
# Fields of a conversation line that the import models (the rest is kept verbatim).
_MODELLED = frozenset(
    {
        "type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "version",
        "gitBranch", "isSidechain", "userType", "message", "requestId", "slug", "agentId",
    }
)  # fmt: skip


def looks_like(first: dict[str, Any]) -> bool:
    """Whether the first line of a file is a Claude Code session's."""
    return isinstance(first.get("type"), str) and (
        "sessionId" in first
        or "uuid" in first
        or first.get("type") in ("summary", "file-history-snapshot", "queue-operation")
    )


def usage_of(usage: Any) -> Usage:
    """Neutral usage of a Messages API usage object, by the rule of the Anthropic provider
    (agent/providers/anthropic_messages.py): input tokens count the whole prompt, cache
    reads and writes included; cached tokens are the cache reads."""
    if not isinstance(usage, dict):
        return Usage()

    def count(key: str) -> int | None:
        value = usage.get(key)
        return value if type(value) is int else None

    fresh, read, written = (
        count("input_tokens"),
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    )
    total = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(total, count("output_tokens"), read)


MakeRun = Callable[[dict[str, Any], RunOrigin | None, str], ImportedRun]
"""(the first line, the run and step that started it, a key naming it) -> a new run."""


class ClaudeReader:
    """Read one Claude Code session file into its run (and its sidechains' runs)."""

    def __init__(
        self,
        source: SourceFile,
        make_run: MakeRun,
        *,
        spawned_by: RunOrigin | None = None,
        sidechain_file: bool = False,
    ) -> None:
        self.source = source
        self._make_run = make_run
        self._spawned_by = spawned_by
        self._sidechain_file = sidechain_file  # a subagent's file: its lines are its run's
        self.main: ImportedRun | None = None
        self.runs: list[ImportedRun] = []
        self.agents: dict[str, str] = {}  # a subagent's id -> the model's id of its call
        self._chains: dict[str, ImportedRun] = {}  # a sidechain line's uuid -> its run
        self._messages: dict[str, str] = {}  # a response's message.id -> its model

    def read(self) -> list[ImportedRun]:
        for number, line in self.source:
            kind = line.get("type")
            if not isinstance(kind, str):
                self.source.problem(number, "no `type`: not a session line")
                continue
            run = self._run_of(line)
            self._learn(run, line)
            if kind == "user":
                self._user(number, line, run)
            elif kind == "assistant":
                self._assistant(number, line, run)
            elif kind == "system" and line.get("subtype") == "compact_boundary":
                run.compacted(_ts(line, run), None)
                self._keep(number, line, run)
            elif kind == "summary":
                summary = line.get("summary")
                if run.step and isinstance(summary, str):
                    run.compacted(_ts(line, run), summary)
                self._keep(number, line, run)
            else:
                if kind not in _BOOKKEEPING:
                    self.source.problem(number, f"unknown line type {kind!r}: kept, not modelled")
                self._keep(number, line, run)
        for run in self.runs:
            run.finish()
        return self.runs

    def _run_of(self, line: dict[str, Any]) -> ImportedRun:
        """The run a line belongs to: the session's, or (in the session's own file) the
        sidechain it continues, or a new sidechain's."""
        if self.main is None:
            self.main = self._make_run(line, self._spawned_by, "")
            self.runs.append(self.main)
        if self._sidechain_file or line.get("isSidechain") is not True:
            return self.main
        uuid, parent = line.get("uuid"), line.get("parentUuid")
        run = self._chains.get(parent) if isinstance(parent, str) else None
        if run is None:
            origin = RunOrigin(self.main.run_id, self.main.step)
            run = self._make_run(line, origin, f"sidechain-{len(self.runs)}")
            self.runs.append(run)
        if isinstance(uuid, str):
            self._chains[uuid] = run
        return run

    def _learn(self, run: ImportedRun, line: dict[str, Any]) -> None:
        """What a run's first lines say of it, until it starts (the first line of a file
        is often bookkeeping that says nothing)."""
        if run.started:
            return
        found = start_of(line, run_id=run.run_id, imported=run.start.imported)
        if run.workspace is None:
            run.workspace = found.workspace
        if run.harness == "claude-code":
            run.harness = found.harness
        if not run.start_ts:
            run.start_ts = found.ts

    def _user(self, number: int, line: dict[str, Any], run: ImportedRun) -> None:
        message = line.get("message")
        if not isinstance(message, dict):
            self.source.problem(number, "a user line without `message`: kept")
            self._keep(number, line, run)
            return
        content = message.get("content")
        ts = _ts(line, run)
        if isinstance(content, str):
            run.user(ts, content)
        elif isinstance(content, list):
            texts = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    self._result(number, line, block, run)
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
            if texts:
                run.user(ts, "\n".join(texts))
        else:
            self.source.problem(number, "a user message without content: kept")
        self._extra(number, line, run)

    def _result(self, number: int, line: dict[str, Any], block: Any, run: ImportedRun) -> None:
        tool_use_id = block.get("tool_use_id")
        if not isinstance(tool_use_id, str):
            self.source.problem(number, "tool_result without tool_use_id: kept")
            return
        outcome = line.get("toolUseResult")
        if isinstance(outcome, dict) and isinstance(outcome.get("agentId"), str):
            self.agents[outcome["agentId"]] = tool_use_id
        output = block.get("content", "")
        if not run.result(
            _ts(line, run), tool_use_id, output, is_error=block.get("is_error") is True
        ):
            self.source.problem(number, f"tool_result for no call of this session ({tool_use_id})")

    def _assistant(self, number: int, line: dict[str, Any], run: ImportedRun) -> None:
        message = line.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list | str):
            self.source.problem(number, "an assistant line without `message.content`: kept")
            self._keep(number, line, run)
            return
        ts = _ts(line, run)
        response_id = message.get("id") if isinstance(message.get("id"), str) else None
        model = message.get("model")
        if isinstance(model, str) and not run.started and model != "<synthetic>":
            run.model = ModelIdentity("anthropic", model)
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        kept = False
        run.output_text(ts, "", response_id=response_id)  # the turn, even without text
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                run.output_text(ts, block["text"], response_id=response_id)
            elif block.get("type") == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    self.source.problem(number, "tool_use without id or name: kept")
                    kept = True
                    continue
                tool_input: Any = block.get("input", {})
                run.output_call(
                    ts,
                    call_id,
                    name,
                    tool_input,
                    orjson.dumps(tool_input).decode(),
                    response_id=response_id,
                )
            else:
                kept = True  # thinking, images, ...: kept as they were
        stop = message.get("stop_reason")
        if isinstance(stop, str):
            run.finish_reason(_STOP.get(stop, "other"))
        if "usage" in message:
            run.add_usage(usage_of(message["usage"]), replace=True)
        if kept:
            self._keep(number, line, run)
        else:
            self._extra(number, line, run)

    def _extra(self, number: int, line: dict[str, Any], run: ImportedRun) -> None:
        """Keep the fields of a conversation line the import does not model."""
        extra = {key: value for key, value in line.items() if key not in _MODELLED}
        if extra:
            extra["uuid"] = line.get("uuid")
            run.keep(_ts(line, run), number, f"{line.get('type')}/fields", extra)

    def _keep(self, number: int, line: dict[str, Any], run: ImportedRun) -> None:
        ts = line.get("timestamp")
        run.keep(ts if isinstance(ts, str) else None, number, str(line.get("type")), line)


_BOOKKEEPING = frozenset(
    {"summary", "system", "file-history-snapshot", "progress", "queue-operation",
     "permission-mode", "custom-title", "tag", "agent-name"}
)  # fmt: skip
_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
         "stop_sequence": "stop", "refusal": "content_filter"}  # fmt: skip


def _ts(line: dict[str, Any], run: ImportedRun) -> str:
    ts = line.get("timestamp")
    return ts if isinstance(ts, str) and ts else run.last_ts


def start_of(line: dict[str, Any], **fields: Any) -> RunStart:
    """What a session's first line says of its run (RunStart's other fields given)."""
    from mini_harness.events import RunSettings, RunWorkspace

    cwd, branch, version = line.get("cwd"), line.get("gitBranch"), line.get("version")
    workspace = None
    if isinstance(cwd, str) and cwd:
        workspace = RunWorkspace(cwd, None, branch if isinstance(branch, str) and branch else None)
    ts = line.get("timestamp")
    return RunStart(
        ts=ts if isinstance(ts, str) else "",
        harness=f"claude-code {version}" if isinstance(version, str) else "claude-code",
        workspace=workspace,
        settings=RunSettings("imported"),
        **fields,
    )
