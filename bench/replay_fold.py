"""Replay: fold a 1,000,000-event transcript; `fold_transcript` against the streaming fold.

Every contender runs in a child interpreter of its own (`python bench/replay_fold.py MODE
PATH`) so that its peak RSS is its own. The targets are `fold_transcript`'s: within 1.3x
the streaming fold's time (iterating `TranscriptFold`, what `mini-harness replay` runs) and
under 200 MB at 1M events. The bare orjson.loads loop and the parse-and-hash floor are
shown for information. The peers (eventsourcing, jq) are in bench/peer_eventsourcing.py.
Both folds are looked up at run time, so this module works on checkouts without
`mini_harness.replay`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import itertools
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ORDER = 40
REPLAY_MODULE = "mini_harness.replay"
MODES = ("orjson", "floor", "reader", "stream", "fold")


def fold_function(attr: str = "fold_transcript") -> Any:
    """`attr` of the replay package (fold_transcript, TranscriptFold), or None without it."""
    try:
        module = importlib.import_module(REPLAY_MODULE)
    except ImportError:
        return None
    return getattr(module, attr, None)


def _consume(value: Any) -> None:
    if hasattr(value, "__next__"):
        for _ in value:
            pass


def _own_peak_kb() -> int:
    """This process's peak RSS: VmHWM where /proc has it (ru_maxrss carries the peak of the
    process that started this one across exec on Linux), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker(mode: str, path: str) -> dict[str, float]:
    """Runs in the child: one pass of `mode` over the file; seconds, lines, peak RSS.

    Imports happen before the clock starts: the figure is the pass, not the start-up.
    """
    import orjson

    from mini_harness.transcripts import TranscriptReader

    fold: Any = fold_function() if mode == "fold" else None
    streaming: Any = fold_function("TranscriptFold") if mode == "stream" else None
    lines = 0
    start = time.perf_counter()
    if mode == "orjson":
        loads = orjson.loads
        with open(path, "rb") as handle:
            for line in handle:
                loads(line)
                lines += 1
    elif mode == "floor":
        # What any fold that checks the chain must do per line: parse it, and hash it for
        # the next line's prev (as the reader does). No envelope, field or protocol checks.
        loads = orjson.loads
        sha256 = hashlib.sha256
        with open(path, "rb") as handle:
            for line in handle:
                loads(line)
                sha256(line[:-1]).digest()[:16].hex()
                lines += 1
    elif mode == "reader":
        for _ in TranscriptReader(path):
            lines += 1
    elif mode == "stream":
        for _ in streaming(path):  # runs and calls, one at a time
            pass
        lines = -1
    else:
        _consume(fold(path))
        lines = -1
    seconds = time.perf_counter() - start
    peak_kb = _own_peak_kb()
    return {"seconds": seconds, "lines": lines, "peak_mb": peak_kb / 1024}


def make_transcript(path: Path, events: int) -> int:
    """Write a transcript of about `events` lines with the real writer; return its line count.

    Every tenth call has invalid input, so folds meet ToolFailed as well as ToolSucceeded.
    """
    from mini_harness.runtime import ToolRuntime
    from mini_harness.tools import default_registry
    from mini_harness.transcripts import JsonlTranscript

    with JsonlTranscript(path) as log:
        runtime = ToolRuntime(default_registry(), log)
        for index in range((events - 2) // 2):
            payload: dict[str, object] = {"text": f"line {index} of a long enough message"}
            if index % 10 == 9:
                payload = {"text": index}
            with contextlib.suppress(Exception):  # a failure is recorded: that is the point
                runtime.dispatch("echo", payload)
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def breakdown(path: Path, rounds: int) -> dict[str, float]:
    """Per-line µs of each step the reader takes, in-process over the first 100,000 lines."""
    import orjson
    from _common import interleave, median

    from mini_harness.transcripts.codec import decode_line, line_hash

    with path.open("rb") as handle:
        lines = [line[:-1] for _, line in zip(range(100_000), handle, strict=False)]

    def per_line(step: Any) -> Any:
        def measure() -> float:
            start = time.perf_counter()
            for line in lines:
                step(line)
            return (time.perf_counter() - start) / len(lines) * 1e6

        return measure

    figures = interleave(
        {
            "orjson.loads": per_line(orjson.loads),
            "decode_line (msgspec: envelope + typed event)": per_line(decode_line),
            "line_hash (SHA-256 of the line, for the chain)": per_line(line_hash),
        },
        rounds,
    )
    return {name: median(values) for name, values in figures.items()}


# Turn by turn: the fold yields TURN items (about twice as many lines), then the bare loop
# parses as many lines of its own handle, and so on to the end of the file.
TURN = 2_000


def turn_by_turn(path: Path, lines: int) -> float:
    """One pass of the streaming fold and the bare loop taking turns in this process: the
    bare loop's CPU time per line over the fold's.

    Whole passes in separate children (the table's rows) are seconds apart, and the
    machine's speed drifts over seconds; turns of a few milliseconds see the same machine.
    """
    import orjson

    fold = fold_function("TranscriptFold")
    loads = orjson.loads
    clock = time.process_time
    fold_seconds = bare_seconds = 0.0
    bare_lines = 0
    items = iter(fold(path))
    with open(path, "rb") as handle:
        while True:
            start = clock()
            taken = sum(1 for _ in itertools.islice(items, TURN))
            middle = clock()
            for line in itertools.islice(handle, 2 * TURN):
                loads(line)
                bare_lines += 1
            end = clock()
            fold_seconds += middle - start
            bare_seconds += end - middle
            if taken < TURN:
                break
        start = clock()
        for line in handle:  # whatever the bare loop has not reached yet
            loads(line)
            bare_lines += 1
        bare_seconds += clock() - start
    return (bare_seconds / bare_lines) / (fold_seconds / lines)


def _child(mode: str, path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def run(config: Any) -> Any:
    from _common import Section, Target, fmt_pct, fmt_rate, interleave, median, ratios

    events = config.scale(1_000_000, 100_000)
    path = config.workdir / "replay.jsonl"
    if path.exists():
        path.unlink()
    lines = make_transcript(path, events)
    size_mb = path.stat().st_size / 2**20
    has_fold = fold_function() is not None
    has_stream = fold_function("TranscriptFold") is not None
    rounds = max(3, config.rounds - 2)
    peaks: dict[str, list[float]] = {mode: [] for mode in MODES}

    def contender(mode: str) -> Any:
        def measure() -> float:
            result = _child(mode, path)
            peaks[mode].append(result["peak_mb"])
            return lines / result["seconds"]

        return measure

    available = {"fold": has_fold, "stream": has_stream}
    modes = [m for m in MODES if available.get(m, True)]
    figures = interleave({mode: contender(mode) for mode in modes}, rounds)
    reader_share = median(ratios(figures["reader"], figures["orjson"]))
    fold_share = median(ratios(figures["fold"], figures["orjson"])) if has_fold else None
    fold_peak = median(peaks["fold"]) if has_fold else None
    stream_rounds = ratios(figures["stream"], figures["orjson"]) if has_stream else []
    stream_share = median(stream_rounds) if has_stream else None
    stream_peak = median(peaks["stream"]) if has_stream else None
    section = Section(
        title=f"Replay of a {lines:,}-event transcript",
        headers=("contender", "events/s (median)", "vs bare orjson.loads loop", "peak RSS (MB)"),
    )
    section.rows = [
        (
            "bare loop: for line in file: orjson.loads(line)",
            fmt_rate(median(figures["orjson"])),
            "",
            f"{median(peaks['orjson']):.0f}",
        ),
        (
            "floor: the bare loop plus SHA-256 of each line (what a chain check costs)",
            fmt_rate(median(figures["floor"])),
            fmt_pct(median(ratios(figures["floor"], figures["orjson"]))),
            f"{median(peaks['floor']):.0f}",
        ),
        (
            "TranscriptReader: typed events, seq and prev checked",
            fmt_rate(median(figures["reader"])),
            fmt_pct(reader_share),
            f"{median(peaks['reader']):.0f}",
        ),
    ]
    if has_stream:
        assert stream_share is not None
        assert stream_peak is not None
        section.rows.append(
            (
                "streaming fold: iterating TranscriptFold (what `mini-harness replay` runs)",
                fmt_rate(median(figures["stream"])),
                fmt_pct(stream_share),
                f"{stream_peak:.0f}",
            )
        )
    else:
        section.rows.append(("streaming fold (TranscriptFold)", "not available", "", ""))
    if has_stream:
        turns = [turn_by_turn(path, lines) for _ in range(rounds)]
        section.rows.append(
            (
                f"streaming fold, taking turns with the bare loop in one process ({TURN:,} "
                "records a turn, CPU time)",
                "",
                fmt_pct(median(turns)),
                "",
            )
        )
    if has_fold:
        assert fold_share is not None
        assert fold_peak is not None
        section.rows.append(
            (
                "fold_transcript: every call record returned at once",
                fmt_rate(median(figures["fold"])),
                fmt_pct(fold_share),
                f"{fold_peak:.0f}",
            )
        )
    else:
        section.rows.append(("fold_transcript (mini_harness.replay)", "not available", "", ""))
    fold_vs_stream = (
        median(ratios(figures["stream"], figures["fold"])) if has_fold and has_stream else None
    )
    full_size = not config.quick
    section.targets = [
        Target("fold_transcript time vs the streaming fold", fold_vs_stream, "<=", 1.3),
        Target(
            f"fold_transcript peak RSS ({lines:,} events"
            + ("" if full_size else "; the target is for 1M: run without BENCH_QUICK")
            + ")",
            fold_peak,
            "<",
            200.0,
            "MB",
        ),
    ]
    section.notes = [
        f"The transcript ({size_mb:.0f} MB) is written by the real writer: echo calls, one in "
        f"ten with invalid input. {rounds} interleaved rounds, each contender in a fresh "
        "child interpreter (peak RSS is that child's own high-water mark, VmHWM, "
        "interpreter included).",
        "The targets are fold_transcript's: it returns a History holding every call "
        "record (compactly, as rows of JSON), so its peak grows with the number of calls; "
        "its time is set against the streaming fold's (events/s of the stream over "
        "events/s of fold_transcript, per round), which holds one run's open state at a "
        "time. The columns against the bare orjson.loads loop are information: the floor "
        "targets they once carried are retired; the yardstick is the peers doing the same "
        "job (bench/peer_eventsourcing.py: eventsourcing's SQLite recorder, jq).",
        "The floor row bounds any fold that checks the prev chain: every line must be parsed "
        "and hashed (SHA-256 through hashlib, about as costly as orjson.loads on these "
        "lines). The streaming fold is one loop over the reader's records: each line is "
        "parsed, hashed and typed by the one decoder, then folded.",
    ]
    if has_stream:
        section.notes.append(
            "The turn-by-turn row times the same two loops a few milliseconds apart instead of "
            f"whole passes apart: its {rounds} passes gave {fmt_pct(min(turns))} to "
            f"{fmt_pct(max(turns))}, against {fmt_pct(min(stream_rounds))} to "
            f"{fmt_pct(max(stream_rounds))} for the whole-pass rounds (median "
            f"{fmt_pct(stream_share or 0.0)}). Whole passes see the machine's speed drift "
            "between them; the turn-by-turn figure is the steadier estimate of the same ratio."
        )
    steps = breakdown(path, rounds)
    per_event = 1e6 / median(figures["reader"])
    section.notes.append(
        "Where a reader's time goes, per line (µs, in-process medians): "
        + ", ".join(f"{name} {value:.2f}" for name, value in steps.items())
        + f"; the whole TranscriptReader step is {per_event:.2f}. The rest is the reader's "
        "own loop: one TranscriptRecord (a msgspec Struct) per line plus seq/prev "
        "bookkeeping. Every typed line costs objects the bare loop never makes (event, "
        "envelope, record) and a SHA-256; a fold that keeps a record per call also pays for "
        "holding them."
    )
    if not has_stream:
        section.notes.append(
            "`mini_harness.replay.TranscriptFold` is not on this checkout: the fold targets "
            'read "not available". The reader row is the reading path any fold is built on.'
        )
    return section


if __name__ == "__main__":
    print(json.dumps(worker(sys.argv[1], sys.argv[2])))
