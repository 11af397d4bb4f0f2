"""Benchmark apply_patch: a 2,000-hunk patch over 200 files, against `git apply` and GNU
`patch` doing the same job on copies of the same tree.

apply_patch is dispatched through ToolRuntime, with and without syncing each written file
and directory (neither peer syncs). Rounds interleave the contenders; each gets a fresh
copy of the tree (not timed). On a busy machine single rounds vary by 2x or more: the
figure to read is the median of the per-round ratios to GNU patch.
Run: .venv/bin/python bench/apply_patch.py [--rounds 15]

`run(config)` is the entry point for bench/run.py, which writes docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import Section, Target, interleave, ratios

from mini_harness.events import NullSink
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.tools import Workspace
from mini_harness.tools.apply_patch import ApplyPatch
from mini_harness.tools.definitions import APPLY_PATCH

FILES, HUNKS_PER_FILE, LINES_PER_HUNK = 200, 10, 12
HEADERS = ("contender", "median ms", "min ms", "median ratio to GNU patch")
PEER = "GNU patch -p1"


def make_tree(root: Path) -> str:
    """Write 200 files under `root`/a and return a `git diff`-style patch of 10 hunks in
    each (one changed line with three lines of context either side)."""
    out: list[str] = []
    for index in range(FILES):
        name = f"pkg{index % 10}/mod_{index}.py"
        lines = [f"value_{index}_{n} = {n}\n" for n in range(HUNKS_PER_FILE * LINES_PER_HUNK)]
        path = root / "a" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
        out += [f"diff --git a/{name} b/{name}", f"--- a/{name}", f"+++ b/{name}"]
        for hunk in range(HUNKS_PER_FILE):
            at = hunk * LINES_PER_HUNK + 5  # 0-based changed line
            out.append(f"@@ -{at - 2},7 +{at - 2},7 @@")
            out += [f" {line}".rstrip("\n") for line in lines[at - 3 : at]]
            out += [f"-{lines[at]}".rstrip("\n"), f"+{lines[at].replace('=', '= -')}".rstrip("\n")]
            out += [f" {line}".rstrip("\n") for line in lines[at + 1 : at + 4]]
    return "\n".join(out) + "\n"


def contenders(root: Path, patch: str) -> dict[str, Callable[[], float]]:
    """Each contender: copy the tree (untimed), apply the patch, return the ms it took."""
    patch_file = root / "change.patch"
    patch_file.write_text(patch)

    def fresh(name: str) -> Path:
        target = root / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(root / "a", target)
        return target

    def tool(sync: bool) -> Callable[[], float]:
        def once() -> float:
            target = fresh("tool")
            registry = ToolRegistry()
            registry.register(APPLY_PATCH, ApplyPatch(Workspace(target), sync=sync))
            runtime = ToolRuntime(registry, NullSink())
            start = time.perf_counter()
            runtime.dispatch("apply_patch", {"patch": patch})
            return (time.perf_counter() - start) * 1000

        return once

    def command(*argv: str) -> Callable[[], float]:
        def once() -> float:
            target = fresh("peer")
            start = time.perf_counter()
            subprocess.run([*argv, str(patch_file)], cwd=target, check=True)
            return (time.perf_counter() - start) * 1000

        return once

    found: dict[str, Callable[[], float]] = {
        "apply_patch (fsync)": tool(True),
        "apply_patch (no fsync)": tool(False),
    }
    if shutil.which("git"):
        found["git apply"] = command("git", "apply")
    if shutil.which("patch"):
        found[PEER] = command("patch", "-s", "-p1", "-i")
    return found


def measure(rounds: int, workdir: Path | None = None) -> dict[str, list[float]]:
    """Each contender's time in each of `rounds` interleaved rounds (ms)."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        return interleave(contenders(root, make_tree(root)), rounds)


def rows(timings: dict[str, list[float]]) -> list[Sequence[str]]:
    """Per contender: median and least time, and the median of its per-round ratios to GNU
    patch's time (the figure a busy machine leaves meaningful)."""
    peer = timings.get(PEER)
    return [
        [
            name,
            f"{statistics.median(values):.0f}",
            f"{min(values):.0f}",
            f"{statistics.median(ratios(values, peer)):.2f}x" if peer else "-",
        ]
        for name, values in timings.items()
    ]


def run(config: Any) -> Section:
    """bench/run.py entry point: one section; the target is GNU patch's time."""
    load = os.getloadavg()[0]
    timings = measure(config.scale(15, 3), config.workdir)
    unsynced = timings["apply_patch (no fsync)"]
    synced = timings["apply_patch (fsync)"]
    peer = timings.get(PEER)
    sync_cost = statistics.median(ratios(synced, unsynced))
    return Section(
        title="apply_patch: 2,000 hunks over 200 files",
        headers=HEADERS,
        rows=rows(timings),
        targets=[
            Target(
                "apply_patch without fsync / GNU patch (2,000 hunks), median per-round ratio",
                statistics.median(ratios(unsynced, peer)) if peer else None,
                "<=",
                1.0,
            )
        ],
        notes=[
            "Dispatched through ToolRuntime (NullSink) on a fresh copy of the tree each round;"
            " git apply and GNU patch run as commands on their own copies; neither syncs.",
            f"The sync (each written file, then each directory) costs "
            f"{statistics.median(synced) - statistics.median(unsynced):.0f} ms here: a median "
            f"per-round ratio of {sync_cost:.2f}x the unsynced time.",
            f"Load average {load:.1f} at the start ({os.cpu_count()} cores).",
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    start = os.getloadavg()
    timings = measure(args.rounds)
    print("| " + " | ".join(HEADERS) + " |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows(timings):
        print("| " + " | ".join(row) + " |")
    synced, unsynced = timings["apply_patch (fsync)"], timings["apply_patch (no fsync)"]
    print(
        f"\nsync cost: median per-round ratio {statistics.median(ratios(synced, unsynced)):.2f}x"
        f"; load average {start[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        f"({os.cpu_count()} cores, {args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
