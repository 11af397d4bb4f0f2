"""Importing other agents' sessions: a 200-session corpus, and peak RSS against file size.

Synthetic Codex rollouts and Claude Code sessions, shaped as the public ones are (a
prompt, reasoning, a command call and its output, the answer, cumulative token counts for
Codex; streamed assistant lines, results with `toolUseResult`, file-history snapshots for
Claude Code), are imported by `mini-harness import DIR -o OUT` in a child interpreter per
measurement, so each figure includes what a user pays (start-up, hashing each file, the
writer). Beside it, the floor: the same child reading every line with orjson and hashing
the bytes, nothing written.

Peak RSS: one rollout of 50 MB and one of 5 MB of the same shape, each imported in a child
of its own; memory should not grow with the file (the request hash is fed message by
message, the messages kept without their text). The same for a Claude Code session, whose
import reads the file twice (its tree first, for rewinds).

`python bench/importing.py MODE PATH OUT` runs one measurement and prints JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import Config, Section, Target, clean_env, median, peak_mb

ORDER = 48
SESSIONS = 200
MB = 1 << 20


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def codex_rollout(path: Path, size: int, seed: int = 0) -> int:
    """A Codex rollout of about `size` bytes; returns its number of turns."""
    session = f"019e{seed:04x}-0000-7000-8000-{seed:012x}"
    out = [
        _line(
            {
                "timestamp": "2026-05-04T09:00:00.000Z",
                "type": "session_meta",
                "payload": {
                    "id": session,
                    "timestamp": "2026-05-04T09:00:00.000Z",
                    "cwd": "/home/me/app",
                    "originator": "codex-tui",
                    "cli_version": "0.128.0",
                    "model_provider": "openai",
                    "git": {"commit_hash": "a" * 40, "branch": "main"},
                },
            }
        )
    ]
    total = len(out[0])
    turns = 0
    tokens = [0, 0, 0]
    body = ("line of output from the command " * 64)[:2000]
    with open(path, "wb") as file:
        file.write(out[0])
        while total < size:
            turns += 1
            second = f"{turns % 60:02d}"
            ts = f"2026-05-04T09:{(turns // 60) % 60:02d}:{second}.000Z"
            prompt = f"Step {turns}: run the tests of module {turns % 17}."
            call = f"call_{seed}_{turns}"
            tokens = [tokens[0] + 9000, tokens[1] + 120, tokens[2] + 8000]
            lines = [
                {"type": "turn_context", "payload": {"model": "gpt-5.5", "cwd": "/home/me/app"}},
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": prompt}],
                    },
                },
                {"type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
                {
                    "type": "response_item",
                    "payload": {"type": "reasoning", "summary": [], "encrypted_content": "x" * 400},
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "exec_command",
                        "arguments": json.dumps({"cmd": f"pytest tests/test_{turns}.py"}),
                        "call_id": call,
                    },
                },
                {
                    "type": "event_msg",
                    "payload": {"type": "exec_command_end", "call_id": call, "exit_code": 0},
                },
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": call,
                        "output": f"Exit code: 0\nOutput:\n{body}{turns}",
                    },
                },
                {"type": "event_msg", "payload": {"type": "agent_message", "message": "Passed."}},
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Passed."}],
                    },
                },
                {
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {
                            "total_token_usage": {
                                "input_tokens": tokens[0],
                                "output_tokens": tokens[1],
                                "cached_input_tokens": tokens[2],
                            }
                        },
                    },
                },
            ]
            for item in lines:
                data = _line({"timestamp": ts, **item})
                file.write(data)
                total += len(data)
    return turns


def claude_session(path: Path, size: int, seed: int = 0) -> int:
    """A Claude Code session of about `size` bytes; returns its number of turns."""
    session = f"{seed:08x}-0000-4000-8000-000000000000"
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/me/app",
        "sessionId": session,
        "version": "2.1.126",
        "gitBranch": "main",
    }
    body = ("line of output from the command " * 64)[:2000]
    total = 0
    turns = 0
    parent: str | None = None
    with open(path, "wb") as file:
        while total < size:
            turns += 1
            ts = f"2026-05-03T10:{(turns // 60) % 60:02d}:{turns % 60:02d}.000Z"
            ids = [f"{seed}-{turns}-{n}" for n in range(5)]
            usage = {
                "input_tokens": 3,
                "cache_read_input_tokens": 9000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 80,
            }
            lines: list[dict[str, Any]] = [
                {
                    "type": "file-history-snapshot",
                    "messageId": ids[0],
                    "snapshot": {"messageId": ids[0], "trackedFileBackups": {}, "timestamp": ts},
                    "isSnapshotUpdate": False,
                },
                {
                    **base,
                    "parentUuid": parent,
                    "type": "user",
                    "uuid": ids[0],
                    "timestamp": ts,
                    "message": {"role": "user", "content": f"Step {turns}: run the tests."},
                },
                {
                    **base,
                    "parentUuid": ids[0],
                    "type": "assistant",
                    "uuid": ids[1],
                    "timestamp": ts,
                    "requestId": f"req_{ids[1]}",
                    "message": {
                        "id": f"msg_{ids[1]}",
                        "model": "claude-sonnet-4-6",
                        "role": "assistant",
                        "type": "message",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"toolu_{ids[1]}",
                                "name": "Bash",
                                "input": {"command": f"pytest tests/test_{turns}.py"},
                            }
                        ],
                        "stop_reason": "tool_use",
                        "usage": usage,
                    },
                },
                {
                    **base,
                    "parentUuid": ids[1],
                    "type": "user",
                    "uuid": ids[2],
                    "timestamp": ts,
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"toolu_{ids[1]}",
                                "content": f"{body}{turns}",
                            }
                        ],
                    },
                    "toolUseResult": {"stdout": f"{body}{turns}", "stderr": ""},
                },
                {
                    **base,
                    "parentUuid": ids[2],
                    "type": "assistant",
                    "uuid": ids[3],
                    "timestamp": ts,
                    "requestId": f"req_{ids[3]}",
                    "message": {
                        "id": f"msg_{ids[3]}",
                        "model": "claude-sonnet-4-6",
                        "role": "assistant",
                        "type": "message",
                        "content": [{"type": "text", "text": "Passed."}],
                        "stop_reason": "end_turn",
                        "usage": usage,
                    },
                },
            ]
            parent = ids[3]
            for item in lines:
                data = _line(item)
                file.write(data)
                total += len(data)
    return turns


def make_corpus(root: Path, sessions: int, size: int) -> int:
    """`sessions` files, half Codex and half Claude Code, of about `size` bytes each."""
    root.mkdir(parents=True, exist_ok=True)
    total = 0
    for index in range(sessions):
        if index % 2:
            path = root / "claude" / f"{index:08x}-0000-4000-8000-000000000000.jsonl"
            path.parent.mkdir(exist_ok=True)
            claude_session(path, size, index)
        else:
            path = root / "codex" / f"rollout-2026-05-04T09-00-00-{index:04d}.jsonl"
            path.parent.mkdir(exist_ok=True)
            codex_rollout(path, size, index)
        total += path.stat().st_size
    return total


def measure(mode: str, path: str, out: str) -> dict[str, float]:
    """In the child: one import (or the floor: read, parse and hash, nothing written)."""
    start = time.perf_counter()
    if mode == "floor":
        import orjson

        files = [Path(path)] if os.path.isfile(path) else sorted(Path(path).rglob("*.jsonl"))
        for file in files:
            digest = hashlib.sha256()
            with open(file, "rb") as handle:
                for raw in handle:
                    digest.update(raw)
                    orjson.loads(raw)
        return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}
    from mini_harness.cli import cli

    try:
        cli.main(["import", path, "-o", out], standalone_mode=False)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    seconds = time.perf_counter() - start
    if code not in (0, None):
        raise SystemExit(f"import exited {code}")
    return {"seconds": seconds, "peak_mb": peak_mb()}


def _child(mode: str, path: Path, out: Path) -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, __file__, mode, str(path), str(out)],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def run(config: Config) -> list[Section]:
    work = config.workdir / "importing"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sessions = config.scale(SESSIONS, 20)
    each = config.scale(150_000, 50_000)
    corpus = work / "corpus"
    corpus_bytes = make_corpus(corpus, sessions, each)
    rounds = max(1, min(config.rounds, 5))
    imports: list[float] = []
    floors: list[float] = []
    for _ in range(rounds):
        imports.append(_child("import", corpus, work / "out")["seconds"])
        floors.append(_child("floor", corpus, work / "out")["seconds"])
    took = median(imports)
    floor = median(floors)
    first = Section(
        title=f"Import: {sessions} sessions ({corpus_bytes / MB:.1f} MB, half of them Codex)",
        headers=["What", "seconds (median)", "ms per session", "MB/s", "vs the floor"],
    )
    first.rows.append(
        [
            "`mini-harness import DIR -o OUT` (loading the CLI included)",
            f"{took:.2f}",
            f"{took * 1000 / sessions:.1f}",
            f"{corpus_bytes / MB / took:.1f}",
            f"{took / floor:.2f}x",
        ]
    )
    first.rows.append(
        [
            "floor: read, orjson-parse and SHA-256 every line, nothing written",
            f"{floor:.2f}",
            f"{floor * 1000 / sessions:.1f}",
            f"{corpus_bytes / MB / floor:.1f}",
            "1.00x",
        ]
    )
    first.notes.append(
        f"Medians of {rounds} interleaved rounds, each a child interpreter. Each session is "
        f"about {each / 1000:.0f} kB: a Codex turn is a prompt (and the event repeating it), "
        "reasoning, a command call, its 2 kB output and the answer, with a cumulative token "
        "count; a Claude Code turn a snapshot, a prompt, a Bash call, its result and the "
        "answer."
    )
    big = config.scale(50 * MB, 10 * MB)
    small = big // 10
    second = Section(
        title="Import peak RSS against file size",
        headers=["File", "size", "turns", "peak RSS", "seconds"],
    )
    ratios: dict[str, float] = {}
    for fmt, make in (("Codex rollout", codex_rollout), ("Claude Code session", claude_session)):
        peaks = []
        for size in (small, big):
            path = work / f"{fmt.split()[0].lower()}-{size // MB}mb.jsonl"
            turns = make(path, size, 1)
            found = _child("import", path, work / "one")
            peaks.append(found["peak_mb"])
            second.rows.append(
                [
                    fmt,
                    f"{path.stat().st_size / MB:.1f} MB",
                    f"{turns:,}",
                    f"{found['peak_mb']:.1f} MB",
                    f"{found['seconds']:.2f}",
                ]
            )
            path.unlink()
        ratios[fmt] = peaks[1] / peaks[0]
    for fmt, value in ratios.items():
        second.targets.append(Target(f"import peak RSS, {fmt} 10x larger", value, "<=", 1.25))
    second.notes.append(
        "Each import runs in a child interpreter of its own; peak RSS is its VmHWM (the "
        "interpreter and the package included). A Claude Code import reads the file twice: "
        "the first pass (for rewinds) keeps numbers only, some 60 bytes a line (its id and "
        "its parent's as 64-bit keys, an index), nothing of the text."
    )
    shutil.rmtree(work, ignore_errors=True)
    return [first, second]


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2], sys.argv[3])))
