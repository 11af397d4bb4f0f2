"""Durable logging: dispatch with an fsync per event, against a naive durable loop."""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _common import (
    Config,
    Section,
    Target,
    echo_loop,
    fmt_rate,
    fmt_ratio,
    fresh_path,
    median,
    naive_call,
    ratios,
)

from mini_harness.transcripts import JsonlTranscript

ORDER = 20
INPUT = {"text": "hello"}


# Subject and naive loop take turns every CHUNK dispatches (about 10-20 ms): a disk's fsync
# latency drifts over seconds, so contenders timed a whole run apart see different disks.
CHUNK = 20
CONTENDERS = ("subject", "naive")


def naive_loop(path: Path) -> Callable[[int], None]:
    """What a user might write for a durable log: stdlib json, a compiled jsonschema
    validator, and per event open, append, flush, fsync and close."""
    import jsonschema

    from mini_harness.tools.echo import ECHO

    validate = jsonschema.Draft202012Validator(ECHO.input_schema).validate
    run_id = uuid.uuid4().hex
    numbers = itertools.count()

    def log(event: dict[str, object]) -> None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def loop(count: int) -> None:
        for _ in range(count):
            seq = 2 * next(numbers)
            naive_call(validate, log, run_id, seq)

    return loop


def run_round(config: Config, count: int, turn_ratios: list[float]) -> dict[str, float]:
    """Dispatches/s of the subject (fsync="always") and the naive durable loop in one round.

    The contenders take turns every CHUNK dispatches, in rotating order, and each one's time
    is the sum of its turns. Appends to `turn_ratios` the subject's rate against the naive
    loop's in each cycle of turns.
    """
    spent = dict.fromkeys(CONTENDERS, 0.0)
    with JsonlTranscript(fresh_path(config, "durable.jsonl"), fsync="always") as log:
        naive = naive_loop(fresh_path(config, "naive-durable.jsonl"))
        turns = list(zip(CONTENDERS, (echo_loop(log), naive), strict=True))
        for _ in range(0, count, CHUNK):
            cycle: dict[str, float] = {}
            for name, loop in turns:
                start = time.perf_counter()
                loop(CHUNK)
                cycle[name] = time.perf_counter() - start
                spent[name] += cycle[name]
            turn_ratios.append(cycle["naive"] / cycle["subject"])
            turns.append(turns.pop(0))
    done = len(range(0, count, CHUNK)) * CHUNK
    return {name: done / seconds for name, seconds in spent.items()}


def run(config: Config) -> Section:
    count = config.scale(400, 80)
    rounds = 2 * config.rounds
    turn_ratios: list[float] = []
    results = [run_round(config, count, turn_ratios) for _ in range(rounds)]
    figures = {name: [result[name] for result in results] for name in CONTENDERS}
    per_round = ratios(figures["subject"], figures["naive"])
    over_naive = median(per_round)
    section = Section(
        title="Durable logging (fsync per event)",
        headers=("contender", "dispatches/s (median)", "subject vs this"),
        rows=[
            (
                'mini-harness: ToolRuntime + JsonlTranscript(fsync="always")',
                fmt_rate(median(figures["subject"])),
                "",
            ),
            (
                "naive: json + jsonschema + open/append/fsync/close per event",
                fmt_rate(median(figures["naive"])),
                fmt_ratio(over_naive),
            ),
        ],
    )
    section.targets = [
        Target(
            'durable dispatch (fsync="always") vs naive durable loop', over_naive, ">=", 1.0, "x"
        )
    ]
    section.notes = [
        f"{count:,} dispatches (2 fsyncs each) per contender and round, {rounds} rounds; "
        f"within a round the contenders take turns every {CHUNK} dispatches, so both see the "
        "disk in the same state (its fsync latency drifts over seconds); "
        f"per-round ratios ranged from {fmt_ratio(min(per_round))} to "
        f"{fmt_ratio(max(per_round))}. Taken turn by turn ({len(turn_ratios)} turns of each), "
        f"the median ratio is {fmt_ratio(median(turn_ratios))}.",
        "Per line the writer takes an exclusive flock, learns the file's size, writes the "
        "line with one os.write, gives the lock back and then syncs (another writer never "
        "waits for this one's disk): exactly two fsyncs per dispatch, as the naive loop.",
    ]
    return section
