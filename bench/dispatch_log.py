"""In-process dispatch of `echo` with a JSONL log (fsync off) and with an in-memory sink,
against what a user might write by hand (json + jsonschema + append)."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import uuid
from pathlib import Path
from typing import Any

from _common import (
    Config,
    Section,
    Target,
    echo_rate,
    fmt_rate,
    fmt_ratio,
    fresh_path,
    interleave,
    median,
    naive_call,
    rate,
    ratios,
)

from mini_harness.events import NullSink
from mini_harness.runtime import MemorySink
from mini_harness.transcripts import JsonlTranscript

ORDER = 10
INPUT = {"text": "hello"}


def run_subject(path: Path, count: int, **options: Any) -> float:
    """Dispatches/s of ToolRuntime + JsonlTranscript(fsync="never"), as an API user runs it."""
    with JsonlTranscript(path, fsync="never", **options) as log:
        return echo_rate(log, count)


def run_memory(count: int) -> float:
    """Dispatches/s of ToolRuntime + MemorySink (a fresh sink, so the list starts empty)."""
    return echo_rate(MemorySink(), count)


def run_unlogged(count: int) -> float:
    """Dispatches/s of ToolRuntime with no log (NullSink): dispatch's own share."""
    return echo_rate(NullSink(), count)


def run_naive(path: Path, count: int, *, compiled: bool = True) -> float:
    """What a user might write: stdlib json, the jsonschema package, open/append/close per event.

    `compiled` builds the validator once (the fair baseline, and the one the target uses);
    without it every call goes through jsonschema.validate(), as its docs first show.
    """
    import jsonschema

    from mini_harness.tools.echo import ECHO

    schema = ECHO.input_schema
    validate = (
        jsonschema.Draft202012Validator(schema).validate
        if compiled
        else lambda instance: jsonschema.validate(instance, schema)
    )
    run_id = uuid.uuid4().hex

    def log(event: dict[str, object]) -> None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def loop() -> None:
        for seq in range(0, 2 * count, 2):
            naive_call(validate, log, run_id, seq)

    return rate(count, loop)


def profile_subject(config: Config, count: int) -> str:
    """The top of a cProfile of the subject loop, sorted by own time."""
    profiler = cProfile.Profile()
    path = fresh_path(config, "profile.jsonl")
    profiler.enable()
    run_subject(path, count)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(14)
    lines = out.getvalue().strip().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    return "\n".join(lines[start:])


def run(config: Config) -> Section:
    count = config.scale(20_000, 4_000)
    naive_count = max(count // 8, 200)
    figures = interleave(
        {
            "subject": lambda: run_subject(fresh_path(config, "subject.jsonl"), count),
            "memory": lambda: run_memory(count),
            "unlogged": lambda: run_unlogged(count),
            "naive": lambda: run_naive(fresh_path(config, "naive.jsonl"), naive_count),
            "naive_validate": lambda: run_naive(
                fresh_path(config, "naive-validate.jsonl"), max(count // 80, 50), compiled=False
            ),
        },
        config.rounds,
    )
    over_naive = median(ratios(figures["subject"], figures["naive"]))
    over_validate = median(ratios(figures["subject"], figures["naive_validate"]))
    memory_over_jsonl = median(ratios(figures["memory"], figures["subject"]))
    section = Section(
        title="Dispatch + log (echo, fsync off)",
        headers=(
            "contender",
            "dispatches/s (median)",
            "JSONL subject vs this (median of per-round ratios)",
        ),
    )
    section.rows = [
        (
            'mini-harness: ToolRuntime + JsonlTranscript(fsync="never")',
            fmt_rate(median(figures["subject"])),
            "",
        ),
        (
            "mini-harness: ToolRuntime + MemorySink",
            fmt_rate(median(figures["memory"])),
            fmt_ratio(1 / memory_over_jsonl),
        ),
        (
            "part: dispatch alone, no log (NullSink) (reference)",
            fmt_rate(median(figures["unlogged"])),
            fmt_ratio(median(ratios(figures["subject"], figures["unlogged"]))),
        ),
        (
            "naive: json + jsonschema + open/append/close",
            fmt_rate(median(figures["naive"])),
            fmt_ratio(over_naive),
        ),
        (
            "naive, calling jsonschema.validate() each time (reference)",
            fmt_rate(median(figures["naive_validate"])),
            fmt_ratio(over_validate),
        ),
    ]
    section.targets = [
        Target("dispatch + log vs naive baseline", over_naive, ">=", 3.0, "x"),
        Target("MemorySink vs JSONL sink", memory_over_jsonl, ">=", 1.0, "x"),
    ]
    section.notes = [
        f"{count:,} dispatches per round ({naive_count:,} for the naive baseline), "
        f"{config.rounds} rounds; every round runs all contenders in rotating order on fresh "
        "files, and each ratio is the median of the per-round ratios.",
        "The naive baseline compiles its jsonschema validator once (kind to it); the "
        "reference row below it calls jsonschema.validate(), which checks the schema on "
        "every call.",
        "Each dispatch writes two lines (ToolCalled, ToolSucceeded), each through the one "
        "path every event takes: the event object to the sink's emit, encoded with orjson, "
        "hashed into the chain, written with one os.write under an exclusive flock taken "
        "and given back around it.",
    ]
    section.extra = (
        f"cProfile of {count // 4:,} subject dispatches (own time; profiling inflates "
        "Python-level calls more than syscalls):\n\n```\n"
        + profile_subject(config, count // 4)
        + "\n```\n"
    )
    return section
