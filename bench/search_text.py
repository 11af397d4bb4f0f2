"""Benchmark search_text over a copy of the installed standard library (~2,000 .py files).

Prints markdown table rows: what was searched, files searched, matches, and the median and
minimum wall time of N dispatches through ToolRuntime (after one warm-up run).
Run: .venv/bin/python bench/search_text.py [--files 2000] [--runs 7] [--header]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from mini_harness.runtime import NullSink, ToolRuntime
from mini_harness.tools import default_registry

CASES: list[tuple[str, dict[str, Any]]] = [
    ("literal, no match (every file read)", {"query": "mini_harness_not_there"}),
    ("literal, common (`import os`, every match)", {"query": "import os", "maxResults": 1000}),
    ("literal, case-insensitive", {"query": "MINI_HARNESS_NOT_THERE", "caseSensitive": False}),
    ("regex, no match", {"query": r"def \w+_not_there\(", "regex": True}),
]


def python_files(count: int) -> list[tuple[Path, Path]]:
    """(source, relative) for the first `count` .py files: stdlib first, then site-packages."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    found += sorted((stdlib / "site-packages").rglob("*.py"))
    return [(p, p.relative_to(stdlib)) for p in found[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--header", action="store_true", help="print the table header first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = python_files(args.files)
        for source, relative in files:
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / relative)
        runtime = ToolRuntime(default_registry(root), NullSink())
        if args.header:
            print("| search_text | files | matches | median ms | min ms |")
            print("| --- | ---: | ---: | ---: | ---: |")
        for label, tool_input in CASES:
            runtime.dispatch("search_text", tool_input)  # warm the page cache
            timings = []
            for _ in range(args.runs):
                start = time.perf_counter()
                result = runtime.dispatch("search_text", tool_input)
                timings.append((time.perf_counter() - start) * 1000)
            output: Any = result.output
            print(
                f"| {label} | {output['filesSearched']:,} | {output['count']:,} "
                f"| {statistics.median(timings):.0f} | {min(timings):.0f} |"
            )


if __name__ == "__main__":
    main()
