"""The built-in tools' definitions (what the model sees): names, descriptions, input schemas
and the limits they state, kept together so the tools describe paths and globs alike.
"""

from __future__ import annotations

from typing import Final

from mini_harness.events import JsonObject
from mini_harness.runtime.definitions import ToolAnnotations, ToolDefinition

SKIPPED_DIRS: Final = frozenset({".git", "node_modules", "dist", "build", ".venv", "__pycache__"})
PATH_MAX: Final = 4096  # Linux's PATH_MAX: a longer path cannot name a file anyway
LIST_DEFAULT_MAX_RESULTS: Final = 1000
LIST_MAX_RESULTS_LIMIT: Final = 10_000

GLOB_DESCRIPTION: Final = (
    "Only files matching this glob. Without a '/' it matches file names ('*.py', "
    "'test_*.{py,txt}'); with one it matches the path relative to `path` "
    "('src/**/*.py'). '*' and '?' stay within one directory, '**' spans directories, "
    "'[abc]' is a character class, '{a,b}' are alternatives."
)
PATH_DESCRIPTION: Final = (
    "Directory relative to the workspace root, e.g. 'src' or 'src/pkg'. Default '.' "
    "(the root). Absolute paths and '..' leading outside the workspace are refused."
)

LIST_FILES = ToolDefinition(
    name="list_files",
    description=(
        "List the files below a directory of the workspace, sorted by path, each with its "
        "size in bytes. Skips " + ", ".join(sorted(SKIPPED_DIRS)) + ", whatever the "
        "workspace's .gitignore ignores, special files, and symlinks leading outside the "
        "workspace. Returned paths are relative to the workspace root and can be passed "
        "to read_file. Use glob to filter and maxDepth to stay shallow; at most maxResults "
        "files are returned and `truncated` says whether more exist."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": PATH_MAX, "description": PATH_DESCRIPTION},
            "glob": {"type": "string", "minLength": 1, "description": GLOB_DESCRIPTION},
            "maxDepth": {
                "type": "integer",
                "minimum": 1,
                "description": (
                    "How many directory levels to descend: 1 lists only the files directly "
                    "in `path`, 2 also those one directory down. Directories left closed "
                    "are named in `deeperDirs`. Default: no limit."
                ),
            },
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": LIST_MAX_RESULTS_LIMIT,
                "description": (
                    f"Return at most this many files (default {LIST_DEFAULT_MAX_RESULTS}); "
                    "`truncated` is true when more matched."
                ),
            },
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(title="List files", read_only_hint=True, open_world_hint=False),
)

DEFAULT_MAX_BYTES: Final = 1 << 20  # 1 MiB
DEFAULT_LINE_LIMIT: Final = 2000

READ_FILE = ToolDefinition(
    name="read_file",
    description=(
        "Read a UTF-8 text file of the workspace by its path relative to the workspace "
        "root. Returns the text of lines startLine..endLine (counted from 1), the file's "
        "totalLines, and `truncated` when lines after endLine were left out. Reads at most "
        f"{DEFAULT_LINE_LIMIT} lines unless `limit` says otherwise; use offset and limit "
        f"to page through long files. Files over {DEFAULT_MAX_BYTES >> 20} MiB, binary files "
        "and anything that is not a regular file are refused with an error."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "maxLength": PATH_MAX,
                "description": (
                    "File path relative to the workspace root, e.g. 'src/app.py' (as "
                    "list_files and search_text return them). Absolute paths and '..' "
                    "leading outside the workspace are refused."
                ),
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to return, counting from 1. Default 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Most lines to return. Default {DEFAULT_LINE_LIMIT}.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(title="Read file", read_only_hint=True, open_world_hint=False),
)

SEARCH_DEFAULT_MAX_RESULTS: Final = 100
SEARCH_MAX_RESULTS_LIMIT: Final = 1000
DEFAULT_MAX_FILE_BYTES: Final = 4 << 20  # larger files are skipped (and counted)

SEARCH_TEXT = ToolDefinition(
    name="search_text",
    description=(
        "Search the workspace's text files for lines containing `query` (a literal string, "
        "or a Python regular expression when regex is true). Returns one match per line as "
        "{path, line, text}, in path order then line order; path is relative to the "
        "workspace root and line counts from 1. Skips binary files, files over "
        f"{DEFAULT_MAX_FILE_BYTES >> 20} MiB, and what list_files skips (.gitignore'd "
        "files, node_modules, .git, ...). At most maxResults matches are returned and "
        "`truncated` says whether more exist."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "The text to find; a regular expression when regex is true.",
            },
            "regex": {
                "type": "boolean",
                "description": (
                    "Treat query as a Python `re` regular expression ('^' and '$' match at "
                    "line boundaries). Default false: query is matched literally."
                ),
            },
            "caseSensitive": {
                "type": "boolean",
                "description": "Match upper and lower case exactly. Default true.",
            },
            "path": {
                "type": "string",
                "maxLength": PATH_MAX,
                "description": (
                    "Directory (or single file) to search, relative to the workspace "
                    "root. Default '.' (the whole workspace)."
                ),
            },
            "glob": {"type": "string", "minLength": 1, "description": GLOB_DESCRIPTION},
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_MAX_RESULTS_LIMIT,
                "description": (
                    f"Return at most this many matches (default {SEARCH_DEFAULT_MAX_RESULTS}); "
                    "`truncated` is true when more exist."
                ),
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(title="Search text", read_only_hint=True, open_world_hint=False),
)

# --- coding tools ---------------------------------------------------------------------

RUN_DEFAULT_TIMEOUT: Final = 60.0
RUN_MAX_TIMEOUT: Final = 600.0


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
        "Show the git status of the workspace's repository: the branch (null when HEAD is "
        "detached) and one entry per changed, staged or untracked file ({status, path}, "
        "plus origPath for a rename or copy; status is git's two-letter code, e.g. ' M' "
        "modified, 'A ' staged new file, 'R ' staged rename, '??' untracked). Paths are "
        "file names relative to the workspace root, as git_diff and read_file take them. "
        "The repository must be at the workspace root. Read-only; at most 32 KiB of "
        "listing, and `truncated` says when entries were left out."
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
        "bounded and `truncated` says when the middle was left out; `invalidUtf8` says "
        "when it held bytes that are not UTF-8 (shown as U+FFFD). The diff can be "
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
        "(---/+++ headers, @@ hunks with context lines; /dev/null to add or delete a file; "
        "git's rename, copy and mode lines). Hunks are placed as `git apply` places them: "
        "give each change context lines before and after it (a hunk starting at line 1 "
        "must match the start of the file, one without context after its change the end). "
        "All or nothing: if a hunk does not match, nothing changes and the error shows the "
        "file's current lines there, so a corrected patch can be made. Paths are relative "
        "to the workspace root; paths outside it, symlinks, binary files and the agent's "
        "own controls (.git, .mini-harness) are refused."
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
    "It runs in a bubblewrap sandbox with no capabilities: the workspace is writable "
    "except .git, .mini-harness and the run's transcript, /tmp and HOME are private and "
    "empty, users' homes are hidden, the rest of the system is read-only, there is no "
    "network, and no Unix socket, ptrace (debuggers) or mount can be used."
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
            "says when the middle was left out) and timedOut. The environment holds only "
            "PATH, HOME, USER, the locale and the terminal type; there is no stdin. "
            + (_SANDBOXED if sandboxed else _UNSANDBOXED)
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
                    "maximum": RUN_MAX_TIMEOUT,
                    "description": (
                        f"Seconds before the command and everything it started are killed "
                        f"(default {RUN_DEFAULT_TIMEOUT:g})."
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
