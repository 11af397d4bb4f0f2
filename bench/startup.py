"""CLI start-up: one logged echo dispatch, against the reference's compiled CLI; and how soon
an agent run (`mini-harness run`) shows its first lines with each model provider.

The reference (the TypeScript harness this one grew from) is not installed with this
project: set BENCH_REFERENCE_CLI to the command that starts its compiled CLI (e.g.
`node /path/to/reference/dist/index.js`); the bench appends the same echo arguments. Without
it the reference row is skipped with a note. The bare interpreter rows are information.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import selectors
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

from _common import (
    Config,
    Section,
    Target,
    clean_env,
    fmt_ratio,
    fresh_path,
    interleave,
    median,
    ratios,
)

ORDER = 50
# What a logged dispatch must import of the project's dependencies: jsonschema_rs is the
# one validator and click the console script itself. The floor of any dispatch.
DEPENDENCIES = "import attrs, msgspec, orjson, hashlib, jsonschema_rs, click"
REFERENCE_ENV = "BENCH_REFERENCE_CLI"


def reference_command() -> list[str] | None:
    """The reference's compiled CLI, from BENCH_REFERENCE_CLI (None when it is unset)."""
    command = os.environ.get(REFERENCE_ENV, "").strip()
    return shlex.split(command) if command else None


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("mini-harness")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mini_harness"]


def timed(command: list[str], env: dict[str, str], cpu: dict[str, list[float]], name: str) -> float:
    """Wall time of one run; the child's CPU time (user + sys) goes into cpu[name]."""
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, command)
    cpu.setdefault(name, []).append(usage.ru_utime + usage.ru_stime)
    return wall


PHASES = """
import time
marks = [time.process_time()]
import attrs, msgspec, orjson, hashlib, jsonschema_rs, click
marks.append(time.process_time())
# Time what defining the project's attrs classes costs (attrs compiles their methods).
classes = [0.0, 0]
def timed(original):
    def define(maybe_cls=None, **options):
        if maybe_cls is None:
            inner = original(**options)
            return lambda cls: count(inner, cls)
        return count(original, maybe_cls, **options)
    return define
def count(decorate, cls, **options):
    start = time.process_time()
    made = decorate(cls, **options)
    classes[0] += time.process_time() - start
    classes[1] += 1
    return made
attrs.frozen, attrs.define = timed(attrs.frozen), timed(attrs.define)
import sys
import mini_harness.cli, mini_harness.runtime.dispatch, mini_harness.tools
import mini_harness.transcripts.writer
marks.append(time.process_time())
sys.argv = ["mini-harness", ARGS]
try:
    mini_harness.cli.cli(prog_name='mini-harness')
except SystemExit:
    pass
marks.append(time.process_time())
own = sum(name.startswith("mini_harness") for name in sys.modules)
print(repr(marks + classes + [own]), file=sys.stderr)
"""
PHASE_NAMES = (
    "interpreter start-up (to the first line of -c)",
    "the dependencies: attrs, msgspec, orjson, hashlib, jsonschema_rs, click",
    "mini-harness's own modules on this path",
    "the run: registry, open log, dispatch, print, close (fsync)",
)


def package_modules() -> int:
    """How many modules the installed mini_harness package has (packages included)."""
    import mini_harness

    root = Path(mini_harness.__file__).parent
    return sum(1 for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def phase_profile(arguments: list[str], env: dict[str, str], runs: int) -> str:
    """CPU time of the logged dispatch by phase, measured inside the child (least of runs)."""
    best = [float("inf")] * len(PHASE_NAMES)
    best_classes = float("inf")
    count = 0
    script = PHASES.replace("ARGS", repr(arguments)[1:-1])  # the items, inside the list
    log = Path(arguments[arguments.index("--log") + 1])
    for _ in range(runs):
        before = log.stat().st_size if log.exists() else 0
        child = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        if not log.exists() or log.stat().st_size <= before:  # the run must have dispatched
            raise RuntimeError(f"the phase run recorded nothing: {child.stderr[-500:]}")
        *marks, classes, made, own = (
            float(v) for v in child.stderr.strip().splitlines()[-1][1:-1].split(",")
        )
        spans = [marks[0]] + [b - a for a, b in itertools.pairwise(marks)]
        best = [min(old, new) for old, new in zip(best, spans, strict=True)]
        best_classes, count, modules = min(best_classes, classes), int(made), int(own)
    rows = [(name, value) for name, value in zip(PHASE_NAMES, best, strict=True)]
    rows[2] = (
        f"mini-harness's own modules on this path ({modules} of {package_modules()})",
        best[2],
    )
    rows.insert(3, (f"  of which defining its {count} attrs classes", best_classes))
    width = max(len(name) for name, _ in rows)
    lines = [f"{'phase':<{width}}  CPU ms"]
    lines += [f"{name:<{width}}  {value * 1000:6.1f}" for name, value in rows]
    return "\n".join(lines)


def run(config: Config) -> list[Section]:
    return [dispatch_section(config), run_section(config)]


def dispatch_section(config: Config) -> Section:
    env = clean_env()
    log = fresh_path(config, "startup.jsonl")
    cli = cli_command()
    echo = ["--tool", "echo", "--tool-input", '{"text":"hello"}']
    commands = {
        "bare": [sys.executable, "-c", "pass"],
        "logged": [*cli, *echo, "--log", str(log)],
        "unlogged": [*cli, *echo],
        "version": [*cli, "--version"],
        "deps": [sys.executable, "-c", DEPENDENCIES],
    }
    reference = reference_command()
    if reference is not None:
        commands["reference"] = [*reference, *echo]
    labels = {
        "bare": "`python -c pass`",
        "logged": '`mini-harness --tool echo --tool-input \'{"text":"hello"}\' --log t.jsonl`',
        "unlogged": "the same without `--log`",
        "version": "`mini-harness --version`",
        "deps": f"`python -c '{DEPENDENCIES}'` (the dependencies alone)",
        "reference": f"the reference's compiled CLI: `{shlex.join([*(reference or []), *echo])}`",
    }
    load = os.getloadavg()
    cpu: dict[str, list[float]] = {}
    for name, command in commands.items():  # warm the bytecode cache and the page cache
        timed(command, env, {}, name)
    rounds = config.scale(21, 7)
    figures = interleave(
        {
            name: functools.partial(timed, command, env, cpu, name)
            for name, command in commands.items()
        },
        rounds,
    )
    share = (
        median(ratios(figures["logged"], figures["reference"])) if reference is not None else None
    )
    section = Section(
        title="CLI start-up",
        headers=("command", "wall (ms, median)", "wall vs bare", "CPU vs bare"),
    )
    for name, label in labels.items():
        if name not in figures:
            continue
        wall = median(figures[name]) * 1000
        if name == "bare":
            section.rows.append((label, f"{wall:.1f}", "", ""))
            continue
        section.rows.append(
            (
                label,
                f"{wall:.1f}",
                fmt_ratio(median(ratios(figures[name], figures["bare"]))),
                fmt_ratio(median(ratios(cpu[name], cpu["bare"]))),
            )
        )
    deps = median(ratios(figures["deps"], figures["bare"]))
    over_deps = median(ratios(figures["logged"], figures["deps"]))
    section.targets = [
        Target("CLI echo dispatch with --log vs the reference's compiled CLI", share, "<=", 1.2)
    ]
    section.notes = [
        f"{rounds} interleaved rounds after one warm-up run of each command, same interpreter "
        "(the venv's), bytecode cache allowed (PYTHONDONTWRITEBYTECODE unset for the "
        "children); the console script is the one pip installed. CPU is the child's user + "
        "system time, a cross-check that is less sensitive to other load on the machine. "
        f"Load average when the rounds began: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        f"on {os.cpu_count()} cores (other work slows every row alike: compare the ratios).",
        f"Bound: the dependencies alone take {fmt_ratio(deps)} the bare start here, and "
        f"the logged dispatch {fmt_ratio(over_deps)} the dependencies alone (attrs pulls in "
        "typing and inspect; msgspec, whose Structs are the event vocabulary, "
        "typing_extensions; orjson dataclasses, uuid and json; hashlib loads OpenSSL, whose "
        "SHA-256 the hash chain needs; jsonschema_rs, the one validator, pulls in email.utils, "
        "decimal and socket; click is the console script). A dispatch imports what it runs: "
        "a built-in tool's module loads on the tool's first call, and the transcript reader, "
        "verify, repair, typed tools, the Context Explorer, the handler threads (timeouts, "
        "async handlers) and the regex engine (text with characters to escape) when used. "
        "Most of what remains of the project's own time is attrs compiling the methods of "
        "each value class it imports (the phase table below); the event vocabulary is "
        "imported whole, agent runs' events included, as msgspec Structs (defined in C, "
        "not compiled per class). With `--log` the default fsync mode "
        "(batch) also syncs the file when the log is closed, which is wall time the CPU "
        "column does not show.",
        "The target compares the logged dispatch with the reference's compiled CLI doing the "
        "same echo dispatch (its wall time, same rounds). "
        + (
            f"The reference was run as `{shlex.join(reference)}`."
            if reference is not None
            else f"{REFERENCE_ENV} is not set on this machine (the reference is not "
            "installed here), so its row is skipped and the target reads not available; the "
            "rows against `python -c pass` are information, not a target."
        ),
    ]
    runs = config.scale(9, 3)
    section.extra = (
        "Where the logged dispatch spends its CPU, by phase (process CPU time measured inside "
        f"the child, the least of {runs} runs per phase; the first phase is what "
        "`python -c pass` costs too):\n\n```\n"
        + phase_profile([*echo, "--log", str(fresh_path(config, "phases.jsonl"))], env, runs)
        + "\n```\n"
    )
    return section


HEADER = "[mini-harness] Model provider:"


def closed_port() -> int:
    """A loopback port nothing listens on (a request there is refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def timed_run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds from the start of `command` to its first line of output (either stream), to
    the provider's header line, and to its exit."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None
    assert child.stderr is not None
    first = header = None
    pending = {child.stdout.fileno(): b"", child.stderr.fileno(): b""}  # by descriptor
    with selectors.DefaultSelector() as streams:
        for stream in (child.stdout, child.stderr):
            streams.register(stream, selectors.EVENT_READ)
        while streams.get_map():
            for key, _ in streams.select():
                data = os.read(key.fd, 65536)
                if not data:
                    streams.unregister(key.fileobj)
                    continue
                now = time.perf_counter() - start
                first = now if first is None else first
                pending[key.fd] += data
                if header is None and HEADER.encode() in pending[key.fd]:
                    header = now
    child.wait()
    ended = time.perf_counter() - start
    if first is None or header is None:
        raise RuntimeError(f"{shlex.join(command)} printed no header: {pending}")
    return first, header, ended


def timed_import(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """The wall time of `command` (`python -c 'import SDK'`), in timed_run's shape."""
    wall = timed(command, env, {}, "import")
    return wall, wall, wall


def run_section(config: Config) -> Section:
    """`mini-harness run` with each provider against a loopback port nothing listens on:
    the time to the first line, to the provider's header, and to the exit (the request
    refused at once, no retry)."""
    port = closed_port()
    env = clean_env()
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL"):
        env.pop(name, None)
    env.update(
        {
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "ANTHROPIC_API_KEY": "sk-bench",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "MINI_HARNESS_MODEL_RETRIES": "0",
        }
    )
    cwd = config.workdir / "run-startup"
    cwd.mkdir(exist_ok=True)
    models = ["mock"] + [sdk for sdk in ("openai", "anthropic") if importlib.util.find_spec(sdk)]
    commands = {
        model: [*cli_command(), "run", "say hi", "--model", model, "--no-log"] for model in models
    }
    imports = {sdk: [sys.executable, "-c", f"import {sdk}"] for sdk in models if sdk != "mock"}
    for command in commands.values():  # warm the bytecode and page caches
        timed_run(command, env, cwd)
    for command in imports.values():
        subprocess.run(command, env=env, check=True)
    rounds = config.scale(9, 3)
    figures = interleave(
        {
            model: functools.partial(timed_run, command, env, cwd)
            for model, command in commands.items()
        }
        | {
            f"import {sdk}": functools.partial(timed_import, command, env)
            for sdk, command in imports.items()
        },
        rounds,
    )
    section = Section(
        title="Agent run start-up: first lines and exit, by provider",
        headers=("`mini-harness run \"say hi\" --model M --no-log`", "first line (ms)",
                 "`Model provider:` line (ms)", "exit (ms)", "`import SDK` alone (ms)"),
    )  # fmt: skip
    for model in models:
        first, header, ended = (median([row[i] for row in figures[model]]) * 1000 for i in range(3))
        alone = (
            f"{median([row[2] for row in figures[f'import {model}']]) * 1000:.0f}"
            if model in imports
            else ""
        )
        section.rows.append((model, f"{first:.0f}", f"{header:.0f}", f"{ended:.0f}", alone))
    section.notes = [
        f"Medians of {rounds} interleaved rounds after one warm-up run of each. The remote "
        "providers are pointed at a loopback port nothing listens on, with "
        "MINI_HARNESS_MODEL_RETRIES=0: their one request is refused at once, so the exit "
        "column is the start-up, the SDK's import, one refused connection, the error line "
        "and the shutdown. The first line is `Not recorded (--no-log)`, the header "
        "`Model provider: ...`; an SDK is imported after it, for the first request (on a "
        "terminal, inside the `Waiting for the model` line). The last column is "
        "`python -c 'import SDK'` in the same rounds, the floor of what the SDK adds.",
    ]
    return section
