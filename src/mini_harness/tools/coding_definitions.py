"""The coding tools' definitions: git_status, git_diff, apply_patch, run_command."""

from __future__ import annotations

from typing import Final

from mini_harness.events import JsonObject
from mini_harness.runtime.definitions import ToolAnnotations, ToolDefinition
from mini_harness.tools.definitions import PATH_MAX
from mini_harness.tools.run_command import DEFAULT_TIMEOUT, MAX_TIMEOUT


def _read_only(title: str) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=True,
        destructive_hint=False,
        idempotent_hint=True,
        open_world_hint=False,
    )


_GIT_PATH: Final[JsonObject] = {
    "type": "string",
    "minLength": 1,
    "maxLength": PATH_MAX,
    "description": (
        "Only this file or directory, relative to the workspace root (a deleted file's path "
        "works too). Default: the whole repository."
    ),
}

GIT_STATUS: Final = ToolDefinition(
    name="git_status",
    description=(
        "Show the git status of the workspace's repository: the branch and one entry per "
        "changed, staged or untracked file ({status, path}; status is git's two-letter "
        "porcelain code, e.g. ' M' modified, 'A ' staged new file, '??' untracked). The "
        "repository must be at the workspace root. Read-only; output is bounded and "
        "`truncated` says when some was left out."
    ),
    input_schema={
        "type": "object",
        "properties": {"path": _GIT_PATH},
        "additionalProperties": False,
    },
    annotations=_read_only("Git status"),
)

GIT_DIFF: Final = ToolDefinition(
    name="git_diff",
    description=(
        "Show `git diff` of the workspace's repository as unified diff text: the changes "
        "not yet staged, or with staged: true the staged ones. Read-only; output is "
        "bounded and `truncated` says when the middle was left out. The diff can be "
        "edited and passed to apply_patch."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": _GIT_PATH,
            "staged": {
                "type": "boolean",
                "description": "Show staged changes (git diff --cached). Default false.",
            },
        },
        "additionalProperties": False,
    },
    annotations=_read_only("Git diff"),
)

APPLY_PATCH: Final = ToolDefinition(
    name="apply_patch",
    description=(
        "Change files of the workspace with a unified diff, as `git diff` prints it "
        "(---/+++ headers, @@ hunks with a few context lines; /dev/null to add or delete a "
        "file). All or nothing: every hunk is checked first; if one does not match the "
        "file, nothing changes and the error shows the file's current lines there, so a "
        "corrected patch can be made. Paths are relative to the workspace root; paths "
        "outside it, symlinks and binary files are refused; renames are not supported."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "patch": {
                "type": "string",
                "minLength": 1,
                "description": "The unified diff text.",
            },
        },
        "required": ["patch"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(
        title="Apply patch",
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
        open_world_hint=False,
    ),
)

_SANDBOXED = (
    "It runs in a bubblewrap sandbox: the workspace is writable, /tmp is private, the rest "
    "of the system is read-only and there is no network."
)
_UNSANDBOXED = (
    "No sandbox is available here (bubblewrap is not installed or cannot run): the command "
    "runs with the user's own rights and network, so every call needs approval."
)


def run_command_definition(*, sandboxed: bool) -> ToolDefinition:
    """run_command's definition; its description says whether commands are sandboxed."""
    return ToolDefinition(
        name="run_command",
        description=(
            "Run a program in the workspace, e.g. the tests: argv is the program and its "
            "arguments (no shell; set shell: true and pass one string to use /bin/sh). "
            "Returns exitCode, stdout and stderr (bounded: head and tail kept, `truncated` "
            "says when the middle was left out) and timedOut. The environment has no API "
            "keys or tokens; there is no stdin. " + (_SANDBOXED if sandboxed else _UNSANDBOXED)
        ),
        input_schema={
            "type": "object",
            "properties": {
                "argv": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "The program and its arguments, e.g. ['pytest', '-q'].",
                },
                "shell": {
                    "type": "boolean",
                    "description": "Run argv[0] as a /bin/sh command line. Default false.",
                },
                "cwd": {
                    "type": "string",
                    "maxLength": PATH_MAX,
                    "description": "Working directory relative to the workspace root. Default '.'.",
                },
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT,
                    "description": (
                        f"Seconds before the command and everything it started are killed "
                        f"(default {DEFAULT_TIMEOUT:g})."
                    ),
                },
            },
            "required": ["argv"],
            "additionalProperties": False,
        },
        annotations=ToolAnnotations(
            title="Run command",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=not sandboxed,
        ),
    )
