"""An imported call as a call of mini-harness's own tools, for `replay --rerun`: the tool
names that map (Codex's shells, Claude Code's Read, Grep, Glob and Bash) with their
arguments rewritten, paths made relative to the workspace the session recorded. Calls of
any other tool, or whose arguments do not translate, get the reason they cannot run."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

from mini_harness.errors import UntranslatableCallError
from mini_harness.events import JsonObject, JsonValue

Mapped = tuple[str, JsonObject] | str
"""(mini-harness tool, its input), or why the call cannot be re-run."""


def _relative(path: JsonValue, cwd: str | None) -> str:
    """`path` relative to the recorded workspace `cwd` (the tools refuse absolute paths)."""
    if not isinstance(path, str) or not path:
        raise UntranslatableCallError(f"path {path!r} is not a path")
    if not os.path.isabs(path):
        return path
    if cwd is None:
        raise UntranslatableCallError(f"{path} is absolute and the session recorded no workspace")
    inside = os.path.relpath(path, cwd)
    if inside == ".." or inside.startswith("../"):
        raise UntranslatableCallError(f"{path} is outside the recorded workspace {cwd}")
    return inside


def _cwd_of(tool_input: JsonObject, key: str, out: JsonObject, cwd: str | None) -> None:
    given = tool_input.get(key)
    if given is not None:
        out["cwd"] = _relative(given, cwd)


def _argv_command(key: str, workdir: str) -> Callable[[JsonObject, str | None], Mapped]:
    """Codex `shell` and `local_shell`: an argv, run as it is."""

    def mapped(tool_input: JsonObject, cwd: str | None) -> Mapped:
        argv = tool_input.get(key)
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise UntranslatableCallError(f"{key} is not a list of strings")
        out: JsonObject = {"argv": list(argv)}
        _cwd_of(tool_input, workdir, out, cwd)
        return "run_command", out

    return mapped


def _shell_line(key: str, workdir: str | None) -> Callable[[JsonObject, str | None], Mapped]:
    """Codex `exec_command` and Claude Code's `Bash`: one shell line."""

    def mapped(tool_input: JsonObject, cwd: str | None) -> Mapped:
        line = tool_input.get(key)
        if not isinstance(line, str) or not line:
            raise UntranslatableCallError(f"{key} is not a command line")
        out: JsonObject = {"argv": [line], "shell": True}
        if workdir is not None:
            _cwd_of(tool_input, workdir, out, cwd)
        return "run_command", out

    return mapped


def _read(tool_input: JsonObject, cwd: str | None) -> Mapped:
    out: JsonObject = {"path": _relative(tool_input.get("file_path"), cwd)}
    for key in ("offset", "limit"):
        value = tool_input.get(key)
        if isinstance(value, int) and value > 0:
            out[key] = value
    return "read_file", out


def _grep(tool_input: JsonObject, cwd: str | None) -> Mapped:
    pattern = tool_input.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise UntranslatableCallError("pattern is not a string")
    out: JsonObject = {"query": pattern, "regex": True}
    if tool_input.get("-i") is True:
        out["caseSensitive"] = False
    if tool_input.get("path") is not None:
        out["path"] = _relative(tool_input["path"], cwd)
    if isinstance(tool_input.get("glob"), str):
        out["glob"] = tool_input["glob"]
    return "search_text", out


def _glob(tool_input: JsonObject, cwd: str | None) -> Mapped:
    pattern = tool_input.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise UntranslatableCallError("pattern is not a string")
    out: JsonObject = {"glob": pattern}
    if tool_input.get("path") is not None:
        out["path"] = _relative(tool_input["path"], cwd)
    return "list_files", out


_MAPPINGS: Final[dict[tuple[str, str], Callable[[JsonObject, str | None], Mapped]]] = {
    ("codex", "shell"): _argv_command("command", "workdir"),
    ("codex", "local_shell"): _argv_command("command", "working_directory"),
    ("codex", "exec_command"): _shell_line("cmd", "workdir"),
    ("claude", "Bash"): _shell_line("command", None),
    ("claude", "Read"): _read,
    ("claude", "Grep"): _grep,
    ("claude", "Glob"): _glob,
}


def rerun_as(fmt: str, name: str, tool_input: JsonValue, cwd: str | None) -> Mapped:
    """The mini-harness call that re-runs the call `name(tool_input)` of a session imported
    from `fmt` ("codex" or "claude") that worked in `cwd`, or why there is none."""
    mapping = _MAPPINGS.get((fmt, name))
    if mapping is None:
        return f"imported {name}: no mini-harness tool does what it did"
    if not isinstance(tool_input, dict):
        return f"imported {name}: its input is not a JSON object"
    try:
        return mapping(tool_input, cwd)
    except UntranslatableCallError as exc:
        return f"imported {name}: {exc}"
