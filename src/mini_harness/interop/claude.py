"""Claude Code session files (`~/.claude/projects/<dir>/<session>.jsonl`, subagents in
`<session>/subagents/agent-*.jsonl`) read into imported runs.

Every line is an object with a `type`: `user` and `assistant` lines carry the conversation
(`message`, as the Messages API has it), linked into a tree by `uuid`/`parentUuid`;
assistant lines that share one `message.id` are one model response written block by
block; `isSidechain` lines are a subagent's conversation (older versions keep them in
the session's own file, newer ones in the subagents directory). The others (`summary`,
`system`, `file-history-snapshot`, `progress`, `queue-operation`, ...) are bookkeeping,
kept as they are. The mapping is in docs/importing.md.

Two things of the real files shape the reading. The file is written as things happen,
not in the tree's order: a tool's result can come a line before the model's line with
the call, so a result for a call not seen yet waits for it. And the lines form a tree:
when the user goes back to an earlier message and sends another one (a rewind), the new
prompt is a second child of the message it went back to. The main line is the one that
goes on to the session's last message; a branch left by a rewind is imported as a run of
its own, forked from the main run at the step it left (`forked_from`), never mixed into
the main run. Finding the branches takes a first pass over the file that keeps only each
line's id and its parent's (as 64-bit numbers) and whether it is a prompt.
"""

from __future__ import annotations

import bisect
import hashlib
import ntpath
import posixpath
import re
from array import array
from typing import Any, Protocol

import orjson

from mini_harness.events import (
    FileEffect,
    ImportSource,
    ModelIdentity,
    RunOrigin,
    RunStarted,
    Usage,
)
from mini_harness.interop.build import ImportedRun, run_start
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


class MakeRun(Protocol):
    """(the first line, the run and step it came from, a key naming it) -> a new run: one
    `spawned_by` that origin, or `forked` from it (a branch a rewind left)."""

    def __call__(
        self, line: dict[str, Any], origin: RunOrigin | None, key: str, *, forked: bool = False
    ) -> ImportedRun: ...


def _is_prompt(line: dict[str, Any]) -> bool:
    """A user line the user wrote (or the agent wrote as the user's): not a tool's result."""
    if line.get("type") != "user":
        return False
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


_PROMPT, _RESULT = 1, 2


def line_key(uuid: str) -> int:
    """A line's uuid as a 64-bit number (0 stands for none): what the first pass keeps."""
    key = int.from_bytes(hashlib.blake2b(uuid.encode(), digest_size=8).digest(), "big")
    return key - (1 << 63) or 1


def abandoned_branches(path: str) -> dict[int, int]:
    """The lines of a session file left by a rewind: line key -> the key of the first
    line of its branch (`line_key`). A branch is an earlier child of a line that later got
    a prompt as another child, with all below it, unless the session's last message
    descends from it (the main line). Sidechains are left out (their own runs).

    Memory: arrays of numbers, at most about 60 bytes a line (the ids as 64-bit keys,
    an index sorted by key, each line's parent); no text, no string is kept."""
    keys, ups, kinds = array("q"), array("q"), bytearray()  # kinds: _PROMPT, _RESULT, 0
    last = -1
    for _number, line in SourceFile(path):
        uuid = line.get("uuid")
        if not isinstance(uuid, str) or line.get("isSidechain") is True:
            continue
        up = line.get("parentUuid")
        keys.append(line_key(uuid))
        ups.append(line_key(up) if isinstance(up, str) else 0)
        kinds.append(_PROMPT if _is_prompt(line) else _RESULT if line.get("type") == "user" else 0)
        if line.get("type") in CONVERSATION:
            last = len(keys) - 1
    count = len(keys)
    if last < 0:
        return {}
    order = array("l", sorted(range(count), key=keys.__getitem__))
    sorted_keys = array("q", (keys[i] for i in order))
    seen = bytearray(count)  # a uuid written again: its first line counts
    for place in range(1, count):
        if sorted_keys[place] == sorted_keys[place - 1]:
            seen[order[place]] = 1

    def index(key: int) -> int:
        place = bisect.bisect_left(sorted_keys, key)
        if not key or place == count or sorted_keys[place] != key:
            return -1
        return order[place]

    parents = array("l", (index(up) for up in ups))
    main = bytearray(count)
    node = last
    while node >= 0 and not main[node]:
        main[node] = 1
        node = parents[node]
    # A line with children before a prompt child: the children before it left.
    first_child = array("l", [-1]) * count
    forks: dict[int, int] = {}  # the line rewound to -> its last prompt child after others
    for line_no in range(count):
        up = parents[line_no]
        if up < 0 or seen[line_no]:
            continue
        if first_child[up] < 0:
            first_child[up] = line_no
        elif kinds[line_no] == _PROMPT:
            forks[up] = line_no
    root_of = array("l", [-1]) * count
    for line_no in range(count):
        up = parents[line_no]
        # A result stays with its call (on the main line): only what the model or the
        # user wrote after the line rewound to left with the branch.
        left = up in forks and line_no < forks[up] and kinds[line_no] != _RESULT
        if left and not main[line_no] and not seen[line_no]:
            root_of[line_no] = line_no
    changed = bool(forks)
    while changed:  # below each root; again while a child came before its parent
        changed = False
        for line_no in range(count):
            up = parents[line_no]
            if root_of[line_no] < 0 and up >= 0 and root_of[up] >= 0 and not main[line_no]:
                root_of[line_no] = root_of[up]
                changed = True
    return {keys[i]: keys[root_of[i]] for i in range(count) if root_of[i] >= 0}


# How the messages Claude Code writes as the user's begin when no person wrote them: a
# local command and its output (`/model`, `/exit`), the caveat before them, a background
# task's notice, the file the IDE has open.
_NOT_PROMPTS = (
    "<local-command-caveat>",
    "<local-command-stdout>",
    "<command-name>",
    "<task-notification>",
    "<ide_opened_file>",
)


def _person_wrote(text: str) -> bool:
    """Whether a user message is a prompt a person wrote (one can be the run's task)."""
    return not text.lstrip().startswith(_NOT_PROMPTS)


def _windows(run: ImportedRun) -> bool:
    """Whether the session ran on Windows (its directory has a drive letter)."""
    workspace = run.start.workspace
    where = workspace.path if workspace is not None else ""
    return re.match(r"^[A-Za-z]:[\\/]", where) is not None


def _relative(path: str, run: ImportedRun) -> str:
    """A file's path as the session's file-history snapshots name it: relative to the
    session's directory when inside it, with the separators of the machine it ran on (a
    session from Windows has `C:\\...` directories)."""
    workspace = run.start.workspace
    where = workspace.path if workspace is not None else None
    if not where:
        return path
    paths: Any = ntpath if _windows(run) else posixpath
    if not paths.isabs(path):
        return path
    try:
        relative: str = paths.relpath(path, where)
    except ValueError:  # another drive
        return path
    return path if relative == ".." or relative.startswith(("../", "..\\")) else relative


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
        self._branches: dict[int, int] = {}  # a line a rewind left -> its branch's first
        self._forks: dict[int, ImportedRun] = {}  # a branch's first line -> its run
        self.forks: list[ImportedRun] = []
        # A result that came before its call: the model's id -> (line number, line, block).
        self._early: dict[str, tuple[int, dict[str, Any], dict[str, Any]]] = {}
        self._names: dict[str, str] = {}  # the model's call id -> the tool's name
        self._files: dict[str, str] = {}  # a file's path -> its text as the calls left it

    def read(self) -> list[ImportedRun]:
        if not self._sidechain_file:
            self._branches = abandoned_branches(self.source.path)
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
        for tool_use_id, (number, _line, _block) in self._early.items():
            self.source.problem(number, f"tool_result for no call of this session ({tool_use_id})")
        for run in self.runs:
            run.finish()
        return self.runs

    def _run_of(self, line: dict[str, Any]) -> ImportedRun:
        """The run a line belongs to: the session's, or (in the session's own file) the
        sidechain it continues, or a new sidechain's."""
        if self.main is None:
            self.main = self._make_run(line, self._spawned_by, "")
            self.runs.append(self.main)
        uuid = line.get("uuid")
        if self._branches and isinstance(uuid, str):
            root = self._branches.get(line_key(uuid))
            if root is not None:
                return self._fork(line, root, uuid)
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

    def _fork(self, line: dict[str, Any], root: int, uuid: str) -> ImportedRun:
        """The run of the branch a rewind left that starts at line `root` (`uuid` is the
        first of its lines read, which names it): forked from the main run at the step
        the branch left it."""
        run = self._forks.get(root)
        if run is None:
            main = self.main
            assert main is not None
            step = main.step + (1 if main.turn_open else 0)
            run = self._make_run(line, RunOrigin(main.run_id, step), f"branch-{root}", forked=True)
            self._forks[root] = run
            self.forks.append(run)
            self.runs.append(run)
        return run

    def _learn(self, run: ImportedRun, line: dict[str, Any]) -> None:
        """What a run's first lines say of it, until it starts (the first line of a file
        is often bookkeeping that says nothing)."""
        if run.started:
            return
        start = run.start
        found = start_of(line, run.run_id, run.imported)
        run.amend(
            workspace=start.workspace or found.workspace,
            harness=found.harness if start.harness == "claude-code" else start.harness,
            ts=start.ts or found.ts,
        )

    def _user(self, number: int, line: dict[str, Any], run: ImportedRun) -> None:
        message = line.get("message")
        if not isinstance(message, dict):
            self.source.problem(number, "a user line without `message`: kept")
            self._keep(number, line, run)
            return
        content = message.get("content")
        ts = _ts(line, run)
        meta = line.get("isMeta") is True  # written by Claude Code, not by a person
        if isinstance(content, str):
            run.user(ts, content, prompt=not meta and _person_wrote(content))
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
                text = "\n".join(texts)
                run.user(ts, text, prompt=not meta and _person_wrote(text))
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
        is_error = block.get("is_error") is True
        effects = None if is_error else self._effects(tool_use_id, outcome, run)
        if not run.result(_ts(line, run), tool_use_id, output, is_error=is_error, effects=effects):
            if tool_use_id in self._early:
                self.source.problem(number, f"a second tool_result for {tool_use_id}")
            else:  # its call may be on a line still to come
                self._early[tool_use_id] = (number, line, block)

    def _effects(
        self, tool_use_id: str, outcome: Any, run: ImportedRun
    ) -> tuple[FileEffect, ...] | None:
        """The file a Write or Edit call changed, with the sha256 of its text before and
        after, when the call's recorded result says (the text before, as `originalFile`,
        or as an earlier call of the session left it; `create`: there was none)."""
        name = self._names.get(tool_use_id)
        if name not in ("Write", "Edit") or not isinstance(outcome, dict):
            return None
        path = outcome.get("filePath")
        if not isinstance(path, str):
            return None
        shown = _relative(path, run)
        key = ntpath.normcase(shown) if _windows(run) else shown  # one file, however named
        before = outcome.get("originalFile")
        if not isinstance(before, str):
            before = self._files.get(key)
        if name == "Write":
            after = outcome.get("content")
            if outcome.get("type") == "create":
                before = None
            elif before is None:
                return None
        else:
            old, new = outcome.get("oldString"), outcome.get("newString")
            if before is None or not isinstance(old, str) or not isinstance(new, str):
                return None
            if old not in before:
                return None
            count = -1 if outcome.get("replaceAll") is True else 1
            after = before.replace(old, new, count)
        if not isinstance(after, str):
            return None
        self._files[key] = after
        before_sha = None if before is None else _sha256(before)
        return (FileEffect(shown, before_sha, _sha256(after)),)

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
            run.amend(model=ModelIdentity("anthropic", model))
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
                self._names[call_id] = name
                early = self._early.pop(call_id, None)
                if early is not None:  # its result was written first
                    self._result(early[0], early[1], early[2], run)
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
     "permission-mode", "custom-title", "tag", "agent-name", "ai-title", "last-prompt",
     "attachment", "mode"}
)  # fmt: skip
_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
         "stop_sequence": "stop", "refusal": "content_filter"}  # fmt: skip


def _ts(line: dict[str, Any], run: ImportedRun) -> str:
    ts = line.get("timestamp")
    return ts if isinstance(ts, str) and ts else run.last_ts


def start_of(
    line: dict[str, Any], run_id: str, imported: ImportSource, **fields: Any
) -> RunStarted:
    """What a session's first line says of its run (its RunStarted's other fields
    given)."""
    from mini_harness.events import RunSettings, RunWorkspace

    cwd, branch, version = line.get("cwd"), line.get("gitBranch"), line.get("version")
    workspace = None
    if isinstance(cwd, str) and cwd:
        workspace = RunWorkspace(cwd, None, branch if isinstance(branch, str) and branch else None)
    ts = line.get("timestamp")
    return run_start(
        run_id,
        ts if isinstance(ts, str) else "",
        f"claude-code {version}" if isinstance(version, str) else "claude-code",
        imported,
        workspace=workspace,
        settings=RunSettings("imported"),
        **fields,
    )
