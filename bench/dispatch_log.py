"""In-process dispatch of `echo` with JSONL logging (fsync off): floor and naive baseline."""

from __future__ import annotations

import cProfile
import datetime
import fcntl
import hashlib
import io
import json
import os
import pstats
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from _common import (
    HEX,
    TS,
    Config,
    Section,
    Target,
    echo_rate,
    fmt_pct,
    fmt_rate,
    fmt_ratio,
    fresh_path,
    interleave,
    median,
    rate,
    ratios,
)

from mini_harness.events import NullSink, ToolCalled
from mini_harness.transcripts import JsonlTranscript

ORDER = 10
INPUT = {"text": "hello"}


def run_subject(path: Path, count: int, **options: Any) -> float:
    """Dispatches/s of ToolRuntime + JsonlTranscript(fsync="never"), as an API user runs it."""
    with JsonlTranscript(path, fsync="never", **options) as log:
        return echo_rate(log, count)


def run_unlogged(count: int) -> float:
    """Dispatches/s of ToolRuntime with no log (NullSink): dispatch's own share."""
    return echo_rate(NullSink(), count)


def run_writer(path: Path, count: int) -> float:
    """Pairs/s of the writer's direct route (what dispatch calls) with fixed fields."""
    payload = orjson.dumps(INPUT)
    call_id = f"{HEX[:12]}-1"
    with JsonlTranscript(path, fsync="never") as log:
        log.append(ToolCalled(TS, HEX, call_id, "echo", INPUT, input_json=payload))
        called, succeeded = log.emit_tool_called, log.emit_tool_succeeded

        def loop() -> None:
            for _ in range(count):
                called(TS, HEX, call_id, "echo", INPUT, payload)
                succeeded(TS, HEX, call_id, "echo", INPUT, 0.004, payload)

        return rate(count, loop)


def run_floor(path: Path, count: int, *, locked: bool = False) -> float:
    """Equivalent event dicts, orjson and one os.write each; `locked` adds the per-append lock.

    The locked variant takes an exclusive flock, learns the file size and unlocks around each
    write: the syscalls any writer that is safe for concurrent appends must make.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
    dumps, write, nl = orjson.dumps, os.write, orjson.OPT_APPEND_NEWLINE
    flock, lseek, ex, un, end = fcntl.flock, os.lseek, fcntl.LOCK_EX, fcntl.LOCK_UN, os.SEEK_END

    def loop() -> None:
        seq = 0
        for index in range(count):
            call_id = f"{HEX[:12]}-{index}"
            called = {
                "type": "ToolCalled",
                "seq": seq,
                "ts": TS,
                "prev": HEX,
                "runId": HEX,
                "callId": call_id,
                "name": "echo",
                "input": INPUT,
            }
            succeeded = {
                "type": "ToolSucceeded",
                "seq": seq + 1,
                "ts": TS,
                "prev": HEX,
                "runId": HEX,
                "callId": call_id,
                "name": "echo",
                "output": INPUT,
                "durationMs": 0.004,
            }
            if locked:
                for event in (called, succeeded):
                    flock(fd, ex)
                    lseek(fd, 0, end)
                    write(fd, dumps(event, option=nl))
                    flock(fd, un)
            else:
                write(fd, dumps(called, option=nl))
                write(fd, dumps(succeeded, option=nl))
            seq += 2

    try:
        return rate(count, loop)
    finally:
        os.close(fd)


def run_inlined(path: Path, count: int) -> float:
    """The subject's per-call work with its structure taken away: one loop, no functions
    of the project's own between the steps, no locks, no error handling.

    Per dispatch: the call id, two timestamps (the project's utc_timestamp), the JSON check
    of input and output (orjson.dumps and the look for null), the registry lookup, echo's
    compiled validator, the handler, both lines encoded with the payload embedded, written
    with one os.write each and hashed into the chain (SHA-256), the duration, a result.
    """
    from mini_harness.events import utc_timestamp
    from mini_harness.tools import default_registry

    lookup = default_registry().get
    echo = lookup("echo")
    assert echo is not None
    echo.validator.check(INPUT)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
    dumps, fragment, write, sha256 = orjson.dumps, orjson.Fragment, os.write, hashlib.sha256
    clock = time.perf_counter_ns

    def loop() -> None:
        prev = HEX
        seq = 0
        for index in range(count):
            call_id = f"{HEX[:12]}-{index}"
            input_json = dumps(INPUT)
            input_json.find(b"null")
            line = dumps(
                {
                    "type": "ToolCalled",
                    "seq": seq,
                    "ts": utc_timestamp(),
                    "prev": prev,
                    "runId": HEX,
                    "callId": call_id,
                    "name": "echo",
                    "input": fragment(input_json),
                }
            )
            write(fd, line + b"\n")
            prev = sha256(line).hexdigest()[:32]
            start = clock()
            tool = lookup("echo")
            assert tool is not None
            tool.validator.check(INPUT)
            output = tool.handler(INPUT)
            output_json = dumps(output)
            output_json.find(b"null")
            duration = round((clock() - start) / 1000) / 1000
            line = dumps(
                {
                    "type": "ToolSucceeded",
                    "seq": seq + 1,
                    "ts": utc_timestamp(),
                    "prev": prev,
                    "runId": HEX,
                    "callId": call_id,
                    "name": "echo",
                    "output": fragment(output_json),
                    "durationMs": duration,
                }
            )
            write(fd, line + b"\n")
            prev = sha256(line).hexdigest()[:32]
            seq += 2
            ("echo", INPUT, output, duration, call_id)  # noqa: B018 - the result's tuple

    try:
        return rate(count, loop)
    finally:
        os.close(fd)


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
            validate(INPUT)
            call_id = uuid.uuid4().hex
            now = datetime.datetime.now(datetime.UTC).isoformat()
            log(
                {
                    "type": "ToolCalled",
                    "seq": seq,
                    "ts": now,
                    "runId": run_id,
                    "callId": call_id,
                    "name": "echo",
                    "input": INPUT,
                }
            )
            output = dict(INPUT)
            now = datetime.datetime.now(datetime.UTC).isoformat()
            log(
                {
                    "type": "ToolSucceeded",
                    "seq": seq + 1,
                    "ts": now,
                    "runId": run_id,
                    "callId": call_id,
                    "name": "echo",
                    "output": output,
                    "durationMs": 0.0,
                }
            )

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
            "no_lease": lambda: run_subject(
                fresh_path(config, "no-lease.jsonl"), count, lock_lease=0
            ),
            "floor": lambda: run_floor(fresh_path(config, "floor.jsonl"), count),
            "locked": lambda: run_floor(fresh_path(config, "locked.jsonl"), count, locked=True),
            "unlogged": lambda: run_unlogged(count),
            "writer": lambda: run_writer(fresh_path(config, "writer.jsonl"), count),
            "inlined": lambda: run_inlined(fresh_path(config, "inlined.jsonl"), count),
            "naive": lambda: run_naive(fresh_path(config, "naive.jsonl"), naive_count),
            "naive_validate": lambda: run_naive(
                fresh_path(config, "naive-validate.jsonl"), max(count // 80, 50), compiled=False
            ),
        },
        config.rounds,
    )
    of_floor = median(ratios(figures["subject"], figures["floor"]))
    over_naive = median(ratios(figures["subject"], figures["naive"]))
    over_validate = median(ratios(figures["subject"], figures["naive_validate"]))
    locked_of_floor = median(ratios(figures["locked"], figures["floor"]))
    of_locked = median(ratios(figures["subject"], figures["locked"]))
    unlogged_of_floor = median(ratios(figures["unlogged"], figures["floor"]))
    writer_of_floor = median(ratios(figures["writer"], figures["floor"]))
    no_lease_of_floor = median(ratios(figures["no_lease"], figures["floor"]))
    ceiling = 1 / (1 / unlogged_of_floor + 1 / writer_of_floor)
    inlined_of_floor = median(ratios(figures["inlined"], figures["floor"]))
    section = Section(
        title="Dispatch + JSONL log (echo, fsync off)",
        headers=(
            "contender",
            "dispatches/s (median)",
            "subject vs this (median of per-round ratios)",
        ),
    )
    section.rows = [
        (
            'mini-harness: ToolRuntime + JsonlTranscript(fsync="never")',
            fmt_rate(median(figures["subject"])),
            "",
        ),
        (
            "mini-harness with lock_lease=0: lock, lseek, write, unlock per line (reference)",
            fmt_rate(median(figures["no_lease"])),
            fmt_pct(median(ratios(figures["subject"], figures["no_lease"]))),
        ),
        (
            "floor: orjson dicts + one os.write per event",
            fmt_rate(median(figures["floor"])),
            fmt_pct(of_floor),
        ),
        (
            "floor + per-append flock/lseek/unlock (reference)",
            fmt_rate(median(figures["locked"])),
            fmt_pct(of_locked),
        ),
        (
            "part: dispatch alone, no log (NullSink) (reference)",
            fmt_rate(median(figures["unlogged"])),
            fmt_pct(median(ratios(figures["subject"], figures["unlogged"]))),
        ),
        (
            "part: the writer alone, its direct route with fixed fields (reference)",
            fmt_rate(median(figures["writer"])),
            fmt_pct(median(ratios(figures["subject"], figures["writer"]))),
        ),
        (
            "the subject's per-call work inlined in one loop, no functions, locks or error "
            "handling (reference)",
            fmt_rate(median(figures["inlined"])),
            fmt_pct(median(ratios(figures["subject"], figures["inlined"]))),
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
        Target("dispatch + log vs floor", of_floor, ">=", 0.40, "%"),
        Target("dispatch + log vs naive baseline", over_naive, ">=", 4.0, "x"),
    ]
    section.notes = [
        f"{count:,} dispatches per round ({naive_count:,} for the naive baseline), "
        f"{config.rounds} rounds; every round runs all contenders in rotating order on fresh "
        "files, and each ratio is the median of the per-round ratios.",
        "The naive baseline compiles its jsonschema validator once (kind to it); the "
        "reference row below it calls jsonschema.validate(), which checks the schema on "
        "every call.",
        "Each dispatch writes two lines (ToolCalled, ToolSucceeded). The floor serialises "
        "equivalent dicts with constant ts/prev strings: no validation, no objects, no "
        "hashing, no lock.",
        f"The lock: the floor with a flock + lseek + unlock around every write reaches "
        f"{fmt_pct(locked_of_floor)} of the floor. The writer keeps the lock for a lease "
        "(5 ms) after taking it, so a line costs one write; with lock_lease=0 the subject "
        f"runs at {fmt_pct(no_lease_of_floor)} of the floor.",
        f"The parts: dispatch with no log at all runs at {fmt_pct(unlogged_of_floor)} of the "
        f"floor's rate, and the writer alone (encode, write and SHA-256 of two lines through "
        f"the direct route) at {fmt_pct(writer_of_floor)}. Their costs add up, so the "
        f"subject cannot beat 1 / (1/dispatch + 1/writer) = {fmt_pct(ceiling)} of the floor "
        "here. Dispatch's share is interpreter work per call (validation, checking that "
        "input and output are JSON, two timestamps, the call id, the result object); the "
        "writer's share holds the floor's own two writes, so even a free dispatch would "
        "leave the subject below the floor by the hashing and bookkeeping of the chain.",
        f"The inlined loop does the subject's per-call work (call id, two timestamps, the "
        "JSON checks, registry lookup, validation, two encoded lines with one write and one "
        "SHA-256 each, a result) with nothing around it, and reaches "
        f"{fmt_pct(inlined_of_floor)} of the floor. The subject's distance to it is the "
        "cost of its structure: the calls between runtime, sink and writer (19 Python calls "
        "per dispatch, dispatch itself and the handler included, against the loop's 5), the "
        "writer's thread lock, the lease's clock checks, and the code that makes every "
        "failure a recorded event.",
    ]
    section.extra = (
        f"cProfile of {count // 4:,} subject dispatches (own time; profiling inflates "
        "Python-level calls more than syscalls):\n\n```\n"
        + profile_subject(config, count // 4)
        + "\n```\n"
    )
    return section
