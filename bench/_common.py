"""Shared pieces of the benchmark suite: configuration, interleaved timing, report sections.

A bench module is any `bench/<name>.py` (name not starting with `_`) that defines
`run(config: Config) -> Section | list[Section]`; `bench/run.py` finds it, runs it and
puts its sections into docs/BENCHMARKS.md. An optional module constant `ORDER` (int)
places it among the others (lower first; default 100).
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Config:
    """What every bench module gets: how hard to work and where to put files."""

    quick: bool
    rounds: int
    workdir: Path  # on the same file system as the project, so fsync reaches a disk

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full


@dataclass(frozen=True)
class Target:
    """One acceptance target: `value op threshold`, e.g. ratio >= 0.40."""

    label: str
    value: float | None  # None: could not be measured on this checkout
    op: str  # ">=", "<=", "<"
    threshold: float
    unit: str = "x"  # "x": ratio shown as 0.00x; "%": shown as percent; other: plain

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        if self.op == ">=":
            return self.value >= self.threshold
        if self.op == "<=":
            return self.value <= self.threshold
        return self.value < self.threshold

    def show(self, value: float | None) -> str:
        if value is None:
            return "not available"
        if self.unit == "%":
            return f"{value * 100:.1f}%"
        if self.unit == "x":
            return f"{value:.2f}x"
        return f"{value:.1f} {self.unit}"


@dataclass
class Section:
    """One table in the report, with the targets it decides and notes under it."""

    title: str
    headers: Sequence[str]
    rows: list[Sequence[str]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: str = ""  # free markdown appended after the notes (e.g. a profile)


ECHO_INPUT = {"text": "hello"}
# Stand-ins with the lengths real values have, for baselines that format and hash nothing.
TS = "2026-01-02T03:04:05.123456Z"
HEX = "0123456789abcdef0123456789abcdef"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def interleave(contenders: Mapping[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Run each contender once per round, rotating the order, and collect what each returns.

    Every contender returns its own figure (a rate or a time); running them side by side in
    every round means that a noisy moment hits all of them, so ratios taken within one
    round stay meaningful on a busy machine.
    """
    names = list(contenders)
    out: dict[str, list[T]] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(contenders[name]())
    return out


def ratios(top: Sequence[float], bottom: Sequence[float]) -> list[float]:
    """Round-by-round ratios top[i] / bottom[i]."""
    return [a / b for a, b in zip(top, bottom, strict=True)]


def rate(count: int, func: Callable[[], None]) -> float:
    """Calls func once and returns count / elapsed seconds."""
    start = time.perf_counter()
    func()
    return count / (time.perf_counter() - start)


def echo_loop(sink: Any) -> Callable[[int], None]:
    """A function that dispatches `echo` n times through a ToolRuntime on `sink`, made after
    the run's first events (header, RunStarted)."""
    from mini_harness import ToolRuntime
    from mini_harness.tools import default_registry

    runtime = ToolRuntime(default_registry(), sink)
    # Header and RunStarted are not part of the loop.
    runtime.dispatch("echo", ECHO_INPUT)
    dispatch = runtime.dispatch

    def loop(count: int) -> None:
        for _ in range(count):
            dispatch("echo", ECHO_INPUT)

    return loop


def echo_rate(sink: Any, count: int) -> float:
    """Dispatches/s of `echo` through a ToolRuntime on `sink` (the run's first events excluded)."""
    loop = echo_loop(sink)
    return rate(count, lambda: loop(count))


def fresh_path(config: Config, name: str) -> Path:
    path = config.workdir / name
    if path.exists():
        path.unlink()
    return path


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}x"


def fmt_pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def clean_env() -> dict[str, str]:
    """The environment for child interpreters, with the bytecode cache allowed.

    A user's shell normally lets Python cache bytecode; measuring start-up without the
    cache would measure compiling the package, not starting it.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def naive_call(
    validate: Callable[[Any], object],
    log: Callable[[dict[str, object]], None],
    run_id: str,
    seq: int,
) -> None:
    """One echo call the way a user might log it: validate, record the call, run echo,
    record its result (stdlib json and a uuid4 per call; `log` appends one event)."""
    import datetime
    import uuid

    validate(ECHO_INPUT)
    call_id = uuid.uuid4().hex
    now = datetime.datetime.now(datetime.UTC).isoformat()
    log(
        {
            "type": "ToolCalled",
            "seq": seq,
            "ts": now,
            "runId": run_id,
            "callId": call_id,
            "name": "echo",
            "input": ECHO_INPUT,
        }
    )
    output = dict(ECHO_INPUT)
    now = datetime.datetime.now(datetime.UTC).isoformat()
    log(
        {
            "type": "ToolSucceeded",
            "seq": seq + 1,
            "ts": now,
            "runId": run_id,
            "callId": call_id,
            "name": "echo",
            "output": output,
            "durationMs": 0.0,
        }
    )


def peak_mb() -> float:
    """This process's peak resident set size in MB (VmHWM; ru_maxrss where /proc is not)."""
    try:
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024
