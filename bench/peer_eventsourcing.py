"""Peers doing the same job: durable dispatch logging, and reading a million events back.

1. Dispatch + durable log per call (an fsync per event) against a naive loop (jsonschema,
   json, open/append/fsync/close) and against the `eventsourcing` library's SQLite
   recorder doing the same calls (validate, record the call, run echo, record the result,
   each record its own synchronous commit). The in-memory sink against the JSONL one.
2. `mini-harness replay --json` of a 1M-event transcript against reading the same events
   back from `eventsourcing`'s SQLite recorder (decoded and tallied) and against a `jq`
   fold over the same file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import orjson
from _common import (
    ECHO_INPUT,
    Config,
    Section,
    Target,
    clean_env,
    echo_loop,
    fmt_rate,
    fmt_ratio,
    fresh_path,
    interleave,
    median,
    ratios,
)

ORDER = 15
ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


def _sqlite_recorder(path: Path) -> Any:
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    datastore = SQLiteDatastore(str(path), originator_id_type="text")
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    return recorder


def eventsourcing_loop(path: Path) -> Callable[[int], None]:
    """n calls through eventsourcing's SQLite recorder: validate, record the call, run echo,
    record the result; each record is one committed transaction (WAL, synchronous FULL)."""
    import jsonschema_rs
    from eventsourcing.persistence import StoredEvent

    recorder = _sqlite_recorder(path)
    validator = jsonschema_rs.validator_for(ECHO_SCHEMA)
    run_id = uuid.uuid4().hex

    def loop(count: int) -> None:
        for index in range(count):
            call_id = f"{run_id}-{index}"
            validator.validate(ECHO_INPUT)
            called = {"callId": call_id, "name": "echo", "input": ECHO_INPUT}
            recorder.insert_events([StoredEvent(call_id, 1, "ToolCalled", orjson.dumps(called))])
            output = {"text": ECHO_INPUT["text"]}
            done = {"callId": call_id, "name": "echo", "output": output, "durationMs": 0.0}
            recorder.insert_events([StoredEvent(call_id, 2, "ToolSucceeded", orjson.dumps(done))])

    return loop


def naive_loop(path: Path) -> Callable[[int], None]:
    """n calls the naive way: jsonschema (compiled once), json.dumps, and for each event an
    open/append/close of the log (no sync: compared with ours at fsync="never")."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(ECHO_SCHEMA)

    def append(record: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def loop(count: int) -> None:
        for index in range(count):
            validator.validate(ECHO_INPUT)
            append({"type": "ToolCalled", "callId": str(index), "input": ECHO_INPUT})
            output = {"text": ECHO_INPUT["text"]}
            append({"type": "ToolSucceeded", "callId": str(index), "output": output})

    return loop


def ours_loop(path: Path, fsync: Literal["always", "batch", "never"]) -> Callable[[int], None]:
    from mini_harness.transcripts import JsonlTranscript

    return echo_loop(JsonlTranscript(path, fsync=fsync))


def memory_loop() -> Callable[[int], None]:
    from mini_harness.runtime import MemorySink

    return echo_loop(MemorySink())


def timed(loop: Callable[[int], None], count: int) -> float:
    start = time.perf_counter()
    loop(count)
    return count / (time.perf_counter() - start)


def dispatch_section(config: Config) -> Section:
    count = config.scale(2_000, 300)
    fast = config.scale(100_000, 20_000)
    naive = config.scale(10_000, 2_000)
    rounds = config.rounds

    def fresh(name: str, make: Callable[[Path], Callable[[int], None]]) -> Callable[[], float]:
        def measure() -> float:
            path = fresh_path(config, name)
            for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                side.unlink(missing_ok=True)
            return timed(make(path), count)

        return measure

    durable = interleave(
        {
            "ours": fresh("durable.jsonl", lambda p: ours_loop(p, "always")),
            "eventsourcing": fresh("durable.sqlite", eventsourcing_loop),
        },
        rounds,
    )

    def fast_measure(make: Callable[[], Callable[[int], None]]) -> Callable[[], float]:
        return lambda: timed(make(), fast)

    sinks = interleave(
        {
            "memory": fast_measure(memory_loop),
            "jsonl": fast_measure(lambda: ours_loop(fresh_path(config, "fast.jsonl"), "never")),
            "naive": lambda: timed(naive_loop(fresh_path(config, "naive.jsonl")), naive),
        },
        rounds,
    )
    vs_es = median(ratios(durable["ours"], durable["eventsourcing"]))
    vs_naive = median(ratios(sinks["jsonl"], sinks["naive"]))
    memory_vs_jsonl = median(ratios(sinks["memory"], sinks["jsonl"]))
    section = Section(
        title="Dispatch + durable log per call: peers doing the same job",
        headers=("contender", "calls/s (median)", "ours vs this (median of per-round ratios)"),
    )
    section.rows = [
        (
            'mini-harness: ToolRuntime + JsonlTranscript(fsync="always")',
            fmt_rate(median(durable["ours"])),
            "",
        ),
        (
            "eventsourcing 9.x SQLiteApplicationRecorder: a commit per event (WAL, synchronous)",
            fmt_rate(median(durable["eventsourcing"])),
            fmt_ratio(vs_es),
        ),
        (
            'mini-harness: ToolRuntime + JsonlTranscript(fsync="never")',
            fmt_rate(median(sinks["jsonl"])),
            "",
        ),
        (
            "naive: jsonschema + json + open/append/close per event, no sync",
            fmt_rate(median(sinks["naive"])),
            fmt_ratio(vs_naive),
        ),
        (
            "mini-harness: ToolRuntime + MemorySink",
            fmt_rate(median(sinks["memory"])),
            f"MemorySink / JSONL: {fmt_ratio(memory_vs_jsonl)}",
        ),
    ]
    section.targets = [
        Target("durable dispatch + log vs eventsourcing SQLite recorder", vs_es, ">=", 1.3),
        Target("dispatch + log (fsync never) vs naive loop (no sync)", vs_naive, ">=", 3.0),
        Target("MemorySink vs JsonlTranscript (fsync never)", memory_vs_jsonl, ">=", 1.0),
    ]
    section.notes.append(
        f"{count:,} calls per durable contender and round ({fast:,} for our sinks, "
        f"{naive:,} for the naive loop), {rounds} rounds in rotating order on fresh files. "
        "Every contender makes two records per call (the call before echo runs, its "
        "result after). At equal durability each pays two disk syncs: ours an fsync per "
        "line, eventsourcing a synchronous commit per record. The naive loop syncs "
        'nothing and is compared with ours at fsync="never". Both peers get a '
        "validator compiled once."
    )
    return section


READ_BACK = """
import sys, orjson
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
recorder = SQLiteApplicationRecorder(SQLiteDatastore(sys.argv[1], originator_id_type="text"))
counts = {}
start = 1
while True:
    batch = recorder.select_notifications(start, 10_000)
    if not batch:
        break
    for item in batch:
        data = orjson.loads(item.state)
        counts[item.topic] = counts.get(item.topic, 0) + 1
    start = batch[-1].id + 1
print(sum(counts.values()))
"""


def load_into_eventsourcing(transcript: Path, db: Path) -> int:
    """Copy every event of the transcript into an eventsourcing SQLite store (untimed)."""
    from eventsourcing.persistence import StoredEvent

    recorder = _sqlite_recorder(db)
    versions: dict[str, int] = {}
    batch: list[Any] = []
    total = 0
    with transcript.open("rb") as handle:
        for line in handle:
            data = orjson.loads(line)
            key = data.get("callId") or data.get("runId") or data.get("transcriptId") or "t"
            versions[key] = versions.get(key, 0) + 1
            batch.append(StoredEvent(key, versions[key], data["type"], line.rstrip(b"\n")))
            if len(batch) == 5_000:
                recorder.insert_events(batch)
                total += len(batch)
                batch = []
    if batch:
        recorder.insert_events(batch)
        total += len(batch)
    return total


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=clean_env())
    return time.perf_counter() - start


def read_back_section(config: Config) -> Section:
    from replay_fold import make_transcript

    events = config.scale(1_000_000, 100_000)
    transcript = fresh_path(config, "peers-replay.jsonl")
    lines = make_transcript(transcript, events)
    db = fresh_path(config, "peers-replay.sqlite")
    load_into_eventsourcing(transcript, db)
    rounds = max(3, config.rounds - 2)
    cli = [sys.executable, "-m", "mini_harness", "replay", str(transcript), "--json"]
    contenders: dict[str, Callable[[], float]] = {
        "ours": lambda: wall(cli),
        "eventsourcing": lambda: wall([sys.executable, "-c", READ_BACK, str(db)]),
    }
    jq = shutil.which("jq")
    if jq:
        jq_fold = [jq, "-c", "-n", "reduce inputs as $e ({}; .[$e.type] += 1)", str(transcript)]
        contenders["jq"] = lambda: wall(jq_fold)
    times = interleave(contenders, rounds)
    vs_es = median(ratios(times["eventsourcing"], times["ours"]))
    vs_jq = median(ratios(times["jq"], times["ours"])) if jq else None
    section = Section(
        title=f"Reading {lines:,} events back: replay --json against peers",
        headers=("contender", "seconds (median)", "ours is this many times as fast"),
    )
    section.rows = [
        ("mini-harness replay T --json (fold, verify, report)", f"{median(times['ours']):.2f}", ""),
        (
            "eventsourcing SQLiteApplicationRecorder.select_notifications + orjson.loads",
            f"{median(times['eventsourcing']):.2f}",
            fmt_ratio(vs_es),
        ),
    ]
    if jq and vs_jq is not None:
        section.rows.append(
            (
                "jq -n 'reduce inputs as $e ({}; .[$e.type] += 1)'",
                f"{median(times['jq']):.2f}",
                fmt_ratio(vs_jq),
            )
        )
    section.targets = [
        Target("replay --json vs eventsourcing read-back (speed)", vs_es, ">=", 2.0),
        Target("replay --json vs a jq fold (speed)", vs_jq, ">=", 1.0),
    ]
    section.notes.append(
        "Each contender runs as its own process over the same events, "
        f"{rounds} rounds in rotating order. Ours parses every line, checks the hash "
        "chain, seq and call protocol and builds the report; the eventsourcing reader "
        "pages through its notifications and decodes each event's JSON; jq counts events "
        "by type (jq is skipped where it is not installed)."
    )
    return section


def run(config: Config) -> list[Section]:
    try:
        import eventsourcing  # noqa: F401
    except ImportError:
        section = Section(title="Peers (eventsourcing)", headers=("note",))
        section.notes.append("skipped: install the bench extra (eventsourcing)")
        return [section]
    return [dispatch_section(config), read_back_section(config)]
