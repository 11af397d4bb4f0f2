"""Small transcripts of every shape, for fuzzing and tampering tests."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson

from mini_harness import ToolCallError, ToolRegistry, ToolRuntime
from mini_harness.transcripts import JsonlTranscript, line_hash


def write_corpus(directory: Path, registry: ToolRegistry) -> list[Path]:
    """Four transcripts: plain calls, failures of each kind, two runs, an unknown event."""
    paths = []
    calls: list[list[tuple[str, object]]] = [
        [("echo", {"text": "a"}), ("echo", {"text": "héllo ✓ \u2028"}), ("add", {"a": 1, "b": 2})],
        [("echo", {"text": 1}), ("boom", {}), ("nan", {}), ("missing", {})],
        [("echo", {"text": "run1"})],
    ]
    for index, batch in enumerate(calls):
        path = directory / f"corpus-{index}.jsonl"
        with JsonlTranscript(path, fsync="never") as sink:
            runtime = ToolRuntime(registry, sink)
            for name, data in batch:
                with contextlib.suppress(ToolCallError):
                    runtime.dispatch(name, data)
            if index == 2:
                ToolRuntime(registry, sink).dispatch("echo", {"text": "run2"})
        paths.append(path)
    unknown = directory / "corpus-3.jsonl"
    unknown.write_bytes(paths[0].read_bytes())
    last = unknown.read_bytes().splitlines()[-1]
    extra = {
        "type": "ModelReplied",
        "seq": orjson.loads(last)["seq"] + 1,
        "ts": "2026-01-01T00:00:00.000000Z",
        "prev": line_hash(last),
        "text": "hi",
    }
    with unknown.open("ab") as handle:
        handle.write(orjson.dumps(extra) + b"\n")
    paths.append(unknown)
    return paths
