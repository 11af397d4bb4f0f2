"""Corpus fold: events/s over many files with 1 worker, all cores and Ray; driver memory.

A generated corpus (2,000 files, 10,000,000 events in full mode) is folded by
`fold_corpus` in a child interpreter per measurement, so each figure includes what a user
pays: starting the worker processes (or tasks) and merging the summaries. The driver's
peak RSS is measured on the whole corpus and on a quarter of it: it should not grow with
the number of files beyond one small row per file.

`python bench/corpus.py MODE DIR [WORKERS]` runs one measurement and prints JSON.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import Config, Section, Target, clean_env, fmt_ratio, median, peak_mb

ORDER = 45
TEMPLATES = 16  # distinct files, copied round-robin: durations and shapes vary by template


def make_corpus(root: Path, files: int, events: int) -> int:
    """`files` transcripts of about events/files lines each; returns the total line count."""
    from mini_harness.events import (
        RunStarted,
        ToolCalled,
        ToolDefinition,
        ToolError,
        ToolFailed,
        ToolSucceeded,
        TranscriptStarted,
    )
    from mini_harness.transcripts import encode_line, line_hash

    root.mkdir(parents=True, exist_ok=True)
    per_file = max(4, events // files)
    rng = random.Random(7)
    tools = (ToolDefinition("echo", "Echo.", {"type": "object"}),)
    ts = "2026-01-01T00:00:00.000000Z"
    templates: list[tuple[bytes, int]] = []
    for index in range(min(TEMPLATES, files)):
        lines: list[bytes] = []
        prev: str | None = None

        def put(event: Any, lines: list[bytes] = lines) -> None:
            nonlocal prev
            line = encode_line(event, len(lines), prev)
            lines.append(line + b"\n")
            prev = line_hash(line)

        put(TranscriptStarted(ts=ts, transcript_id=f"{index:032x}"))
        run_id = f"{index:x}".rjust(32, "a")
        put(RunStarted(ts=ts, run_id=run_id, harness="0.1.0", tools=tools))
        number = 0
        while len(lines) + 2 <= per_file:
            number += 1
            call_id = f"{run_id[:12]}-{number}"
            name = ("echo", "read_file", "search_text")[number % 3]
            data = {"text": f"message {number} of file {index}"}
            put(ToolCalled(ts=ts, run_id=run_id, call_id=call_id, name=name, input=data))
            duration = round(rng.lognormvariate(0, 1.2), 3)
            if number % 17:
                put(ToolSucceeded(ts, run_id, call_id, name, data, duration))
            else:
                error = ToolError("handler_error" if number % 2 else "timeout", "no")
                put(ToolFailed(ts, run_id, call_id, name, error, duration))
        templates.append((b"".join(lines), len(lines)))
    total = 0
    for number in range(files):
        body, count = templates[number % len(templates)]
        (root / f"d{number % 20:02d}").mkdir(exist_ok=True)
        (root / f"d{number % 20:02d}" / f"t{number:05d}.jsonl").write_bytes(body)
        total += count
    return total


def measure(mode: str, root: str, workers: int) -> dict[str, float]:
    """In the child: one fold of the corpus; seconds, events, files, peak RSS of the driver."""
    from mini_harness.replay import fold_corpus

    if mode == "startup":
        # The fixed cost of a pool: two small files with `workers` processes (a cold start,
        # as a command pays it) against the same two in this process.
        two = sorted(Path(root).rglob("*.jsonl"))[:2]
        start = time.perf_counter()
        fold_corpus(two, workers=1)
        one = time.perf_counter() - start
        start = time.perf_counter()
        fold_corpus(two, workers=workers)
        return {"seconds": time.perf_counter() - start - one}
    start = time.perf_counter()
    cpu = time.process_time()
    ray_start = 0.0
    if mode == "ray":
        from mini_harness.replay.corpus.ray import LOOPBACK_ONLY, fold_corpus_ray

        os.environ.update(LOOPBACK_ONLY)
        import ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - start
        start = time.perf_counter()
        report = fold_corpus_ray([root])
        seconds = time.perf_counter() - start
        ray.shutdown()
    else:
        report = fold_corpus([root], workers=workers)
        seconds = time.perf_counter() - start
    assert report.exit_code == 0, report.to_json()["totals"]
    return {
        "seconds": seconds,
        "events": report.total("events"),
        "files": len(report.files),
        "peak_mb": peak_mb(),
        "cpu": time.process_time() - cpu,  # the driver's: with workers, not theirs
        "ray_start": ray_start,
    }


def _child(mode: str, root: Path, workers: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, mode, str(root), str(workers)],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout
    result: dict[str, float] = json.loads(out.splitlines()[-1])
    return result


def _ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run(config: Config) -> Section:
    files = config.scale(2_000, 100)
    events = config.scale(10_000_000, 200_000)
    cores = os.cpu_count() or 1
    root = config.workdir / "corpus"
    quarter = config.workdir / "corpus-quarter"
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(quarter, ignore_errors=True)
    total = make_corpus(root, files, events)
    make_corpus(quarter, files // 4, events // 4)
    load = os.getloadavg()
    rounds = max(1, min(config.rounds, 3))
    runs: dict[str, list[dict[str, float]]] = {"1 worker": [], f"{cores} workers": []}
    if cores >= 2:
        runs.setdefault("2 workers", [])
    if _ray_available():
        runs[f"Ray, local, {cores} CPUs"] = []
    for _ in range(rounds):
        for label, items in runs.items():
            if label.startswith("Ray"):
                items.append(_child("ray", root, cores))
            else:
                items.append(_child("local", root, int(label.split()[0])))
    small = _child("local", quarter, cores)
    startup = _child("startup", quarter, cores)["seconds"]

    def rate(label: str) -> float:
        """The best round's events/s: on a shared machine, the least disturbed run."""
        return max(item["events"] / item["seconds"] for item in runs[label])

    section = Section(
        title=f"Corpus fold: {files:,} files, {total:,} events",
        headers=[
            "How",
            "events/s (best)",
            "events/s (median)",
            "driver CPU s",
            "driver peak RSS",
            "vs 1 worker",
        ],
    )
    one = rate("1 worker")
    for label, items in runs.items():
        middle = median([item["events"] / item["seconds"] for item in items])
        section.rows.append(
            [
                label,
                f"{rate(label):,.0f}",
                f"{middle:,.0f}",
                f"{median([item['cpu'] for item in items]):.1f}",
                f"{max(item['peak_mb'] for item in items):.0f} MB",
                fmt_ratio(rate(label) / one),
            ]
        )
    section.rows.append(
        [
            f"{cores} workers, a quarter of the files",
            f"{small['events'] / small['seconds']:,.0f}",
            "",
            f"{small['cpu']:.1f}",
            f"{small['peak_mb']:.0f} MB",
            "",
        ]
    )
    two = rate("2 workers") / one if "2 workers" in runs else None
    section.targets.append(Target("corpus fold, 2 workers vs 1 (2 cores)", two, ">=", 1.8))
    full_peak = max(item["peak_mb"] for item in runs[f"{cores} workers"])
    section.targets.append(
        Target(
            "corpus driver peak RSS, all files vs a quarter",
            full_peak / small["peak_mb"],
            "<=",
            1.25,
        )
    )
    ray_items = [items for label, items in runs.items() if label.startswith("Ray")]
    ray_note = " Ray is not installed: no Ray row."
    if ray_items:
        ray_start = median([item["ray_start"] for item in ray_items[0]])
        ray_note = f" Ray start-up (not in its events/s): {ray_start:.1f} s."
    section.notes.append(
        f"Load average when the corpus was made: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        f"on {cores} cores (a shared machine: scaling is bounded by the cores left free).{ray_note}"
    )
    section.notes.append(
        f"Fixed cost of a pool of {cores} worker processes (start-up, a cold start as each "
        f"command pays it): {startup:.2f} s; it is in the rows above."
    )
    section.notes.append(
        "Each row is a child interpreter folding the whole corpus with `fold_corpus` "
        "(pool start-up and merging included), in interleaved rounds; the best of "
        f"{rounds} rounds (the least disturbed on a shared machine) and their median. "
        "Driver CPU: the fold itself with 1 worker; with workers, the driver's own share "
        "(handing out batches, merging summaries)."
    )
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(quarter, ignore_errors=True)
    return section


if __name__ == "__main__":
    mode_arg, root_arg, workers_arg = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps(measure(mode_arg, root_arg, workers_arg)))
