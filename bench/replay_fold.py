"""Replay: fold a 1,000,000-event transcript, against a bare orjson.loads loop; peak RSS.

Every contender runs in a child interpreter of its own (`python bench/replay_fold.py MODE
PATH`) so that its peak RSS is its own. The fold is looked up at run time, so this module
works on checkouts with and without `mini_harness.replay.fold_transcript`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ORDER = 40
FOLD = ("mini_harness.replay", "fold_transcript")
MODES = ("orjson", "reader", "fold")


def fold_function() -> Any:
    """The fold entry point, or None when this checkout has none."""
    module_name, attr = FOLD
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attr, None)


def _consume(value: Any) -> None:
    if hasattr(value, "__next__"):
        for _ in value:
            pass


def worker(mode: str, path: str) -> dict[str, float]:
    """Runs in the child: one pass of `mode` over the file; seconds, lines, peak RSS.

    Imports happen before the clock starts: the figure is the pass, not the start-up.
    """
    import orjson

    from mini_harness.transcripts import TranscriptReader

    fold = fold_function() if mode == "fold" else None
    lines = 0
    start = time.perf_counter()
    if mode == "orjson":
        loads = orjson.loads
        with open(path, "rb") as handle:
            for line in handle:
                loads(line)
                lines += 1
    elif mode == "reader":
        for _ in TranscriptReader(path):
            lines += 1
    else:
        _consume(fold(path))
        lines = -1
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
            "decode_line (loads + envelope + typed event)": per_line(decode_line),
            "line_hash (SHA-256 of the line, for the chain)": per_line(line_hash),
        },
        rounds,
    )
    return {name: median(values) for name, values in figures.items()}


def _child(mode: str, path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def run(config: Any) -> Any:
    from _common import Section, Target, fmt_pct, fmt_rate, interleave, median, ratios

    events = config.scale(1_000_000, 100_000)
    path = config.workdir / "replay.jsonl"
    if path.exists():
        path.unlink()
    lines = make_transcript(path, events)
    size_mb = path.stat().st_size / 2**20
    has_fold = fold_function() is not None
    rounds = max(3, config.rounds - 2)
    peaks: dict[str, list[float]] = {mode: [] for mode in MODES}

    def contender(mode: str) -> Any:
        def measure() -> float:
            result = _child(mode, path)
            peaks[mode].append(result["peak_mb"])
            return lines / result["seconds"]

        return measure

    modes = [m for m in MODES if m != "fold" or has_fold]
    figures = interleave({mode: contender(mode) for mode in modes}, rounds)
    reader_share = median(ratios(figures["reader"], figures["orjson"]))
    fold_share = median(ratios(figures["fold"], figures["orjson"])) if has_fold else None
    fold_peak = median(peaks["fold"]) if has_fold else None
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
            "TranscriptReader: typed events, seq and prev checked",
            fmt_rate(median(figures["reader"])),
            fmt_pct(reader_share),
            f"{median(peaks['reader']):.0f}",
        ),
    ]
    if has_fold:
        assert fold_share is not None
        assert fold_peak is not None
        section.rows.append(
            (
                "fold_transcript (mini_harness.replay)",
                fmt_rate(median(figures["fold"])),
                fmt_pct(fold_share),
                f"{fold_peak:.0f}",
            )
        )
    else:
        section.rows.append(("fold_transcript (mini_harness.replay)", "not available", "", ""))
    section.targets = [
        Target("replay fold vs bare orjson.loads loop", fold_share, ">=", 0.35, "%"),
        Target("replay fold peak RSS", fold_peak, "<", 150.0, "MB"),
    ]
    section.notes = [
        f"The transcript ({size_mb:.0f} MB) is written by the real writer: echo calls, one in "
        f"ten with invalid input. {rounds} interleaved rounds, each contender in a fresh "
        "child interpreter (peak RSS is that child's ru_maxrss, interpreter included).",
    ]
    steps = breakdown(path, rounds)
    per_event = 1e6 / median(figures["reader"])
    section.notes.append(
        "Where a reader's time goes, per line (µs, in-process medians): "
        + ", ".join(f"{name} {value:.2f}" for name, value in steps.items())
        + f"; the whole TranscriptReader step is {per_event:.2f}. The rest is the reader's "
        "own loop: one TranscriptRecord (attrs) per line plus seq/prev bookkeeping. Every "
        "typed line costs objects the bare loop never makes (event, envelope, record) and a "
        "SHA-256; a fold that keeps a record per call also pays for holding them."
    )
    if not has_fold:
        section.notes.append(
            "`mini_harness.replay.fold_transcript` is not on this checkout: the fold targets "
            'read "not available". The reader row is the reading path any fold is built on.'
        )
    return section


if __name__ == "__main__":
    print(json.dumps(worker(sys.argv[1], sys.argv[2])))
