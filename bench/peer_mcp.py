"""MCP over stdio through the official client: our server against the SDK's MCPServer.

Both serve the same echo tool; ours also appends every call to a transcript with an fsync
per event (`--fsync always`), the peer records nothing. Measured: the latency of one call
at a time (p50, p99) and the throughput with 20 calls in flight.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import Config, Section, Target, fmt_rate, fmt_ratio, fresh_path, median

ORDER = 60
IN_FLIGHT = 20
FSYNC = os.environ.get("BENCH_MCP_FSYNC", "always")
PEER = Path(__file__).resolve().parent / "_mcp_peer_server.py"


def commands(config: Config) -> dict[str, list[str]]:
    log = fresh_path(config, "mcp-bench.jsonl")
    return {
        "ours": [sys.executable, "-m", "mini_harness", "mcp", "--log", str(log), "--fsync", FSYNC],
        "peer": [sys.executable, str(PEER)],
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def _session_figures(command: list[str], sequential: int, concurrent: int) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:])
    latencies: list[float] = []
    with open("/dev/null", "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(20):  # warm up both ends
                await session.call_tool("echo", {"text": "warm"})
            for index in range(sequential):
                start = time.perf_counter()
                result = await session.call_tool("echo", {"text": f"hello {index}"})
                latencies.append(time.perf_counter() - start)
                assert not result.is_error
            per_task = concurrent // IN_FLIGHT

            async def worker() -> None:
                for index in range(per_task):
                    result = await session.call_tool("echo", {"text": f"x {index}"})
                    assert not result.is_error

            start = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(IN_FLIGHT):
                    group.start_soon(worker)
            elapsed = time.perf_counter() - start
    return {
        "p50": percentile(latencies, 0.50),
        "p99": percentile(latencies, 0.99),
        "throughput": per_task * IN_FLIGHT / elapsed,
    }


def session_figures(command: list[str], sequential: int, concurrent: int) -> dict[str, Any]:
    import anyio

    return anyio.run(_session_figures, command, sequential, concurrent)


def run(config: Config) -> Section:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        section = Section(title="MCP over stdio", headers=("note",))
        section.notes.append("skipped: the mcp extra is not installed")
        return section
    sequential = config.scale(1000, 200)
    concurrent = config.scale(2000, 400)
    rounds = max(3, config.rounds - 2)
    figures: dict[str, list[dict[str, Any]]] = {"ours": [], "peer": []}
    for index in range(rounds):
        order = ["ours", "peer"] if index % 2 == 0 else ["peer", "ours"]
        for name in order:
            figures[name].append(session_figures(commands(config)[name], sequential, concurrent))

    def med(name: str, key: str) -> float:
        return median([f[key] for f in figures[name]])

    def ratio(key: str) -> float:
        pairs = zip(figures["ours"], figures["peer"], strict=True)
        return median([ours[key] / peer[key] for ours, peer in pairs])

    p50, p99, tput = ratio("p50"), ratio("p99"), ratio("throughput")
    section = Section(
        title="MCP over stdio: our server (logging, fsync per event) vs the SDK's MCPServer",
        headers=("contender", "p50 (ms)", "p99 (ms)", f"calls/s, {IN_FLIGHT} in flight"),
    )
    for name, label in (
        ("ours", "mini-harness mcp --log T --fsync always"),
        ("peer", "mcp SDK MCPServer, same echo tool, no log"),
    ):
        section.rows.append(
            (
                label,
                f"{med(name, 'p50') * 1000:.2f}",
                f"{med(name, 'p99') * 1000:.2f}",
                fmt_rate(med(name, "throughput")),
            )
        )
    section.rows.append(
        (
            "ours / peer (median of per-round ratios)",
            fmt_ratio(p50),
            fmt_ratio(p99),
            fmt_ratio(tput),
        )
    )
    section.targets = [
        Target("MCP call latency p50, ours / SDK MCPServer", p50, "<=", 1.0),
        Target("MCP call latency p99, ours / SDK MCPServer", p99, "<=", 1.5),
        Target(f"MCP throughput, {IN_FLIGHT} in flight, ours / SDK MCPServer", tput, ">=", 1.0),
    ]
    section.notes.append(
        f"{sequential:,} sequential calls and {concurrent:,} calls spread over {IN_FLIGHT} "
        f"concurrent tasks per round, {rounds} rounds alternating which server goes first; "
        "each round starts both servers afresh through the official client "
        "(mcp.stdio_client + ClientSession). Ours writes ToolCalled and a terminal event "
        "per call, each fsynced before it answers; the peer writes nothing."
    )
    return section
