"""`mini-harness sessions` over a store of 500 sessions.

The store is made of real agent runs (a scripted model, 8 steps, each an `echo` of about
4 KB, so a session is about 100 KB, mostly conversation and tool output), a tenth of them
with a second run in the same file. `sessions --all --json` is timed as a user runs it (a child
interpreter, start-up included), next to the same interpreter's start-up alone; in-process,
`SessionStore.runs()` is timed against folding every file whole (what the listing did
before it read only the lines that start and finish runs).

`python bench/sessions_list.py` prints the table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import Config, Section, Target, clean_env, fmt_ratio, interleave, median, ratios

ORDER = 58
STEPS = 8
OUTPUT_BYTES = 4096


def _script(path: Path) -> Path:
    call = {"toolCalls": [{"name": "echo", "arguments": {"text": "x" * OUTPUT_BYTES}}]}
    path.write_text(json.dumps({"responses": [call] * (STEPS - 1) + [{"text": "done"}]}))
    return path


def make_store(root: Path, sessions: int, workdir: Path) -> int:
    """`sessions` sessions under `root`, one a minute back from now; their total bytes."""
    import attrs

    from mini_harness import ToolRuntime
    from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
    from mini_harness.events import RunWorkspace
    from mini_harness.store import SessionStore
    from mini_harness.tools import default_registry
    from mini_harness.transcripts import JsonlTranscript

    store = SessionStore(root)
    script = _script(workdir / "sessions-script.json")
    now = dt.datetime.now(dt.UTC)
    workspace = RunWorkspace(str(workdir))
    total = 0
    for index in range(sessions):
        path = store.new_transcript(f"{index:032x}", now - dt.timedelta(minutes=index))
        config = AgentConfig(
            task=f"task {index}", max_steps=STEPS, stream=False, workspace=workspace
        )
        with JsonlTranscript(path, fsync="never") as sink:
            tasks = [config] if index % 10 else [config, attrs.evolve(config, task="and now?")]
            for each in tasks:  # every tenth session holds a second run
                runtime = ToolRuntime(default_registry(), sink)
                outcome = AgentLoop(runtime, ScriptProvider(script), each).run()
                if outcome.stop_reason != "final":
                    raise RuntimeError(f"the scripted run ended early: {outcome}")
        total += path.stat().st_size
    return total


def _cli_seconds(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mini_harness", "sessions", "--all", "--json"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def _startup_seconds(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mini_harness", "--version"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def _store_seconds(root: Path, expected: int) -> float:
    from mini_harness.store import SessionStore

    start = time.perf_counter()
    runs = SessionStore(root).runs()
    elapsed = time.perf_counter() - start
    if len(runs) != expected:
        raise RuntimeError(f"listed {len(runs)} runs, not {expected}")
    return elapsed


def _whole_seconds(root: Path, expected: int) -> float:
    from mini_harness.replay.history import TranscriptFold
    from mini_harness.store import SessionStore

    start = time.perf_counter()
    count = 0
    for path, _mtime in SessionStore(root).transcripts():
        count += len(TranscriptFold(path, damage=True).read().runs)
    elapsed = time.perf_counter() - start
    if count != expected:
        raise RuntimeError(f"folded {count} runs, not {expected}")
    return elapsed


def run(config: Config) -> Section:
    sessions = config.scale(500, 100)
    home = config.workdir / "sessions-home"
    root = home / "sessions"
    made = time.perf_counter()
    size = make_store(root, sessions, config.workdir)
    made = time.perf_counter() - made
    runs = sessions + (sessions + 9) // 10
    env = {**clean_env(), "MINI_HARNESS_HOME": str(home)}
    rounds = max(5, config.rounds)
    timed = interleave(
        {
            "cli": lambda: _cli_seconds(env),
            "startup": lambda: _startup_seconds(env),
            "store": lambda: _store_seconds(root, runs),
            "whole": lambda: _whole_seconds(root, runs),
        },
        rounds,
    )
    speedup = median(ratios(timed["whole"], timed["store"]))
    section = Section(
        f"sessions: {sessions} sessions ({runs} runs, {size / 1e6:,.0f} MB)",
        ["what", "median ms", "per session µs"],
    )
    rows = [
        ("`mini-harness sessions --all --json` (child interpreter)", "cli"),
        ("`mini-harness --version` (start-up alone)", "startup"),
        ("SessionStore.runs(): the lines that start and finish runs", "store"),
        ("every file folded whole (the listing before)", "whole"),
    ]
    for label, key in rows:
        seconds = median(timed[key])
        section.rows.append([label, f"{seconds * 1e3:,.1f}", f"{seconds / sessions * 1e6:,.0f}"])
    section.targets.append(
        Target("sessions listing, store vs every file whole", speedup, ">=", 2.0)
    )
    section.notes.append(
        f"Median of {rounds} interleaved rounds (files in the page cache). The store was made "
        f"in {made:.1f} s by real agent runs with a scripted model ({STEPS} steps each, an "
        f"echo of {OUTPUT_BYTES:,} bytes per step; every tenth session holding a second run). "
        f"Store vs whole, round by round: {fmt_ratio(speedup)}. A session whose runs all "
        "finished is read by its RunStarted and RunFinished lines, found by a scan of the "
        "mapped file (transcripts/skim.py); one with a run unfinished, a torn tail or lines "
        "in another key order is folded whole."
    )
    return section


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        result = run(Config(quick="--quick" in sys.argv, rounds=5, workdir=Path(tmp)))
        print(result.title)
        for row in result.rows:
            print(row)
        for target in result.targets:
            print(target.label, target.show(target.value), target.met)
        print(*result.notes)
