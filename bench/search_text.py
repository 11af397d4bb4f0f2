"""Benchmark search_text over a copy of the installed standard library (~2,000 .py files).

Prints markdown table rows: what was searched, files searched, matches, and the median and
minimum wall time of N dispatches through ToolRuntime (after one warm-up run).
Run: .venv/bin/python bench/search_text.py [--files 2000] [--runs 9] [--header]

`run(config)` is the entry point for bench/run.py, which writes docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from mini_harness.events import NullSink
from mini_harness.runtime import ToolRuntime
from mini_harness.tools import default_registry

HEADERS = ("search_text", "files", "matches", "median ms", "min ms")
TARGET_MS = 1000.0  # the acceptance target: a literal search "well under a second"
CASES: list[tuple[str, dict[str, Any]]] = [
    ("literal, no match (every file read)", {"query": "mini_harness_not_there"}),
    ("literal, common (`import os`, every match)", {"query": "import os", "maxResults": 1000}),
    ("literal, case-insensitive", {"query": "MINI_HARNESS_NOT_THERE", "caseSensitive": False}),
    ("regex, no match", {"query": r"def \w+_not_there\(", "regex": True}),
]


def python_files(count: int) -> list[tuple[Path, Path]]:
    """(source, relative) for the first `count` .py files: stdlib first, then site-packages."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found: list[Path] = []
    for directory, subdirs, names in os.walk(stdlib):
        subdirs[:] = sorted(d for d in subdirs if d not in ("site-packages", "__pycache__"))
        found += [Path(directory, n) for n in sorted(names) if n.endswith(".py")]
    if len(found) < count:
        found += sorted((stdlib / "site-packages").rglob("*.py"))
    return [(p, p.relative_to(stdlib)) for p in found[:count]]


def measure(root: Path, files: int, runs: int) -> list[tuple[str, int, int, float, float]]:
    """Copy `files` Python files under `root`, then time each case: (label, files searched,
    matches, median ms, min ms)."""
    for source, relative in python_files(files):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / relative)
    runtime = ToolRuntime(default_registry(root), NullSink())
    rows = []
    for label, tool_input in CASES:
        runtime.dispatch("search_text", tool_input)  # warm the page cache
        timings = []
        for _ in range(runs):
            start = time.perf_counter()
            result = runtime.dispatch("search_text", tool_input)
            timings.append((time.perf_counter() - start) * 1000)
        output: Any = result.output
        rows.append(
            (
                label,
                output["filesSearched"],
                output["count"],
                statistics.median(timings),
                min(timings),
            )
        )
    return rows


def markdown_row(row: tuple[str, int, int, float, float]) -> list[str]:
    label, searched, count, median_ms, min_ms = row
    return [label, f"{searched:,}", f"{count:,}", f"{median_ms:.0f}", f"{min_ms:.0f}"]


def run(config: Any) -> Any:
    """bench/run.py entry point: one section, with the literal-search target."""
    from _common import Section, Target

    with tempfile.TemporaryDirectory(dir=config.workdir) as tmp:
        rows = measure(Path(tmp), 2000, config.scale(9, 3))
    return Section(
        title="search_text",
        headers=HEADERS,
        rows=[markdown_row(row) for row in rows],
        targets=[
            Target("search_text literal, ~2,000 files", rows[0][3], "<", TARGET_MS, unit="ms")
        ],
        notes=[
            "Dispatched through ToolRuntime over a temporary copy of 2,000 .py files (the"
            " installed standard library, topped up from its site-packages); one warm-up run"
            " per case.",
            "The quick test suite checks a 400-file copy (median < 0.5 s) and `pytest "
            "--thorough` the 2,000-file one (`tests/tools/test_search_text.py::TestSpeed`).",
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--header", action="store_true", help="print the table header first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(Path(tmp), args.files, args.runs)
    if args.header:
        print("| " + " | ".join(HEADERS) + " |")
        print("| --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(markdown_row(row)) + " |")


if __name__ == "__main__":
    main()
