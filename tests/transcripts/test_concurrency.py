from __future__ import annotations

import multiprocessing
from pathlib import Path

import orjson

from mini_harness.runtime import ToolCalled, ToolSucceeded
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, TranscriptReader


def _append(path: str, label: str, count: int) -> None:
    with JsonlTranscript(path) as sink:
        from mini_harness import ToolRuntime

        runtime = ToolRuntime(default_registry(), sink)
        for index in range(count):
            runtime.dispatch("echo", {"text": f"{label}-{index}"})


class TestConcurrentProcesses:
    def test_two_processes_never_interleave(self, tmp_path: Path) -> None:
        """2 processes x 2,000 dispatches: 8,000+ whole lines, dense seq, unbroken chain."""
        path = tmp_path / "shared.jsonl"
        ctx = multiprocessing.get_context("spawn")
        workers = [ctx.Process(target=_append, args=(str(path), f"p{i}", 2000)) for i in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
            assert worker.exitcode == 0
        raw = path.read_bytes().splitlines()
        assert all(orjson.loads(line) for line in raw)
        reader = TranscriptReader(path)
        records = list(reader)
        assert len(records) >= 8000
        assert [r.seq for r in records] == list(range(len(records)))
        assert reader.problems == []
        assert reader.torn_tail is None
        outputs = [r.event.output["text"] for r in records if isinstance(r.event, ToolSucceeded)]
        assert sorted(outputs) == sorted(f"p{i}-{n}" for i in (0, 1) for n in range(2000))
        assert sum(isinstance(r.event, ToolCalled) for r in records) == 4000
