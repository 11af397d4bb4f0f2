"""Check an import against its sources: tool calls, outcomes and usage counted straight from
the Codex rollouts and Claude Code sessions, beside what the imported transcripts record.

    python bench/import_check.py SOURCES... [--imported DIR] [--json]

Without --imported, the sources are imported first (`mini-harness import SOURCES -o TMP`).
The source side is counted here with its own small reading of the two formats (not the
importer's), so a call the importer drops, doubles or leaves without its outcome, or usage
it sums differently, shows as a difference. Printed: per session and in total, the source
lines, the calls and results in the source and in the import, usage (input, output, cached)
in both, and the source lines kept as `SourceRecord` (not modelled), by type. Exit 1 when
any session differs.

Counting rules (the formats' own):
- Codex: a call is a `function_call`, `custom_tool_call` or `local_shell_call` response
  item (by `call_id`) or a `web_search_call`; its result is the `*_output` item with the
  same `call_id` (a web search ends in its own item). Usage is the last `token_count`'s
  `total_token_usage` (cumulative), or the sum of the early versions' per-turn counts.
- Claude Code: a call is a `tool_use` block (by id, however many lines repeat it), its
  result a `tool_result` block naming that id. Usage is counted once per `message.id` (the
  last line's usage of the message): input = input + cache reads + cache writes, cached =
  cache reads. A session's subagents' files (`<session>/subagents/agent-*.jsonl`) count
  with it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


class Count:
    """What one session holds: lines, call ids, result ids and usage.

    (A plain class: bench/run.py loads every bench module without registering it, which
    dataclasses need.)"""

    def __init__(self) -> None:
        self.lines = 0
        self.calls: list[str] = []  # one entry per call recorded
        self.results: set[str] = set()
        self.usage = [0, 0, 0]  # input, output, cached
        self.kept: collections.Counter[str] = collections.Counter()


def _objects(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as file:
        for raw in file:
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def count_codex(path: Path) -> Count:
    count = Count()
    total: dict[str, Any] | None = None
    early = [0, 0, 0]
    for line in _objects(path):
        count.lines += 1
        item = line.get("payload") if "payload" in line else line
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in CODEX_CALLS:
            count.calls.append(str(item.get("call_id") or item.get("id")))
        elif kind == "web_search_call":
            search = item.get("id") or f"web_search:{count.lines}"
            count.calls.append(str(search))
            if isinstance(item.get("status"), str) and item["status"] != "in_progress":
                count.results.add(str(search))
        elif kind in CODEX_OUTPUTS:
            count.results.add(str(item.get("call_id")))
        elif kind == "token_count":
            info = item.get("info", item)
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                total = info["total_token_usage"]
            elif isinstance(info, dict) and "input_tokens" in info:
                for index, key in enumerate(
                    ("input_tokens", "output_tokens", "cached_input_tokens")
                ):
                    early[index] += _int(info.get(key))
    if total is not None:
        count.usage = [
            _int(total.get("input_tokens")),
            _int(total.get("output_tokens")),
            _int(total.get("cached_input_tokens")),
        ]
    else:
        count.usage = early
    count.results &= set(count.calls)
    return count


def count_claude(path: Path) -> Count:
    count = Count()
    stem = path.name.removesuffix(".jsonl")
    files = [path]
    subagents = path.parent / stem / "subagents"
    if subagents.is_dir():
        files += sorted(subagents.glob("agent-*.jsonl"))
    for file in files:
        seen: set[str] = set()
        usage: dict[str, dict[str, Any]] = {}
        for line in _objects(file):
            count.lines += 1
            message = line.get("message")
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            if line.get("type") == "assistant":
                for block in blocks:
                    is_call = isinstance(block, dict) and block.get("type") == "tool_use"
                    if is_call and str(block.get("id")) not in seen:
                        seen.add(str(block.get("id")))
                        count.calls.append(str(block.get("id")))
                if isinstance(message.get("usage"), dict):
                    key = message.get("id") or f"line:{count.lines}"
                    usage[key] = message["usage"]
            elif line.get("type") == "user":
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        count.results.add(str(block.get("tool_use_id")))
        for used in usage.values():
            read = _int(used.get("cache_read_input_tokens"))
            written = _int(used.get("cache_creation_input_tokens"))
            count.usage[0] += _int(used.get("input_tokens")) + read + written
            count.usage[1] += _int(used.get("output_tokens"))
            count.usage[2] += read
    count.results &= set(count.calls)
    return count


def sources(paths: list[str]) -> dict[str, tuple[str, Count]]:
    """Source path -> (format, what it holds), for every session file under `paths`."""
    found: dict[str, tuple[str, Count]] = {}
    for given in paths:
        files = [Path(given)] if os.path.isfile(given) else sorted(Path(given).rglob("*.jsonl"))
        for path in files:
            if path.parent.name == "subagents":
                continue
            first = next(_objects(path), None)
            if first is None:
                continue
            payload_codex = "payload" in first and first.get("type") in (
                "session_meta",
                "response_item",
                "turn_context",
                "event_msg",
            )
            if payload_codex or ("instructions" in first and "uuid" not in first):
                found[str(path.resolve())] = ("codex", count_codex(path))
            elif any(key in first for key in ("sessionId", "uuid", "parentUuid")) or first.get(
                "type"
            ) in ("summary", "file-history-snapshot", "queue-operation"):
                found[str(path.resolve())] = ("claude", count_claude(path))
    return found


def imported(directory: Path) -> dict[str, Count]:
    """Source path (a session's main file) -> what its imported transcripts record."""
    out: dict[str, Count] = collections.defaultdict(Count)
    for transcript in sorted(directory.rglob("*.jsonl")):
        runs: dict[str, str] = {}  # run id -> the session's main source file
        for event in _objects(transcript):
            kind = event.get("type")
            run = str(event.get("runId"))
            if kind == "RunStarted" and isinstance(event.get("imported"), dict):
                source = event["imported"]["path"]
                part = event["imported"].get("part")
                if part:  # a subagent's file: <session>/subagents/agent-*.jsonl
                    source = str(Path(source).parent.parent) + ".jsonl"
                runs[run] = str(Path(source).resolve())
            count = out[runs[run]] if run in runs else None
            if count is None:
                continue
            if kind == "ToolCalled":
                count.calls.append(str(event.get("toolUseId")))
            elif kind in ("ToolSucceeded", "ToolFailed"):
                count.results.add(str(event.get("callId")))
            elif kind == "RunFinished" and isinstance(event.get("usage"), dict):
                usage = event["usage"]
                count.usage[0] += _int(usage.get("inputTokens"))
                count.usage[1] += _int(usage.get("outputTokens"))
                count.usage[2] += _int(usage.get("cachedTokens"))
            elif kind == "SourceRecord":
                count.kept[str(event.get("sourceType"))] += 1
    return out


def compare(source: dict[str, tuple[str, Count]], done: dict[str, Count]) -> dict[str, Any]:
    rows = []
    totals: dict[str, Any] = collections.defaultdict(int)
    kept: collections.Counter[str] = collections.Counter()
    usage_source = [0, 0, 0]
    usage_imported = [0, 0, 0]
    for path, (fmt, want) in sorted(source.items()):
        got = done.get(path, Count())
        dup = len(got.calls) - len(set(got.calls))
        ok = (
            sorted(got.calls) == sorted(want.calls)
            and len(got.results) == len(want.results)
            and got.usage == want.usage
        )
        rows.append(
            {
                "session": path,
                "format": fmt,
                "lines": want.lines,
                "calls": [len(want.calls), len(got.calls)],
                "results": [len(want.results), len(got.results)],
                "duplicates": dup,
                "missing": sorted(set(want.calls) - set(got.calls))[:5],
                "usage": [want.usage, got.usage],
                "ok": ok,
            }
        )
        totals["sessions"] += 1
        totals[f"sessions_{fmt}"] += 1
        totals["lines"] += want.lines
        totals["calls_source"] += len(want.calls)
        totals["calls_imported"] += len(got.calls)
        totals["results_source"] += len(want.results)
        totals["results_imported"] += len(got.results)
        totals["differing"] += 0 if ok else 1
        for index in range(3):
            usage_source[index] += want.usage[index]
            usage_imported[index] += got.usage[index]
        kept.update(got.kept)
    return {
        "sessions": rows,
        "totals": dict(totals),
        "usage": {"source": usage_source, "imported": usage_imported},
        "kept": dict(kept.most_common()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--imported", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    source = sources(args.sources)
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.imported
        if directory is None:
            directory = Path(tmp)
            subprocess.run(
                [sys.executable, "-m", "mini_harness", "import", *args.sources, "-o", tmp],
                capture_output=True,
                check=False,
            )
        report = compare(source, imported(directory))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for row in report["sessions"]:
            if not row["ok"]:
                print(
                    f"DIFFERS {row['session']}: calls {row['calls']}, results {row['results']}, "
                    f"duplicates {row['duplicates']}, missing {row['missing']}, "
                    f"usage {row['usage'][0]} vs {row['usage'][1]}"
                )
        t = report["totals"]
        print(
            f"sessions {t.get('sessions', 0)} (codex {t.get('sessions_codex', 0)}, "
            f"claude {t.get('sessions_claude', 0)}), source lines {t.get('lines', 0):,}"
        )
        print(
            f"calls: source {t.get('calls_source', 0):,}, imported {t.get('calls_imported', 0):,}"
            f"; results: source {t.get('results_source', 0):,}, "
            f"imported {t.get('results_imported', 0):,}"
        )
        print(f"usage (input, output, cached): source {report['usage']['source']}")
        print(f"                             imported {report['usage']['imported']}")
        print(f"sessions differing: {t.get('differing', 0)}")
        print("source lines kept as SourceRecord, by type:")
        for kind, number in report["kept"].items():
            print(f"  {number:>7,}  {kind}")
    return 1 if report["totals"].get("differing") else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # its reader (head, less) stopped reading: nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
