"""The repository the git tools read: the workspace's own, through a git directory of ours.

A repository's configuration can name commands (filters, textconv, an external diff, a
pager, an fsmonitor hook, hooks), and any of them would run with the harness's rights.
Turning each off with `-c` overrides is a deny-list that a large or oddly named
configuration slips through. Instead git never reads the repository's configuration: it
runs with GIT_DIR set to a private directory whose `config` we write, holding only a few
settings copied from the repository that describe its format and how files are compared
(KEPT_SETTINGS, each value a plain word), and links to the repository's objects, refs,
index and the rest of its data. Hooks, includes and worktree configuration are not there,
and neither the system nor the user configuration is read. This holds with or without
bubblewrap; where bubblewrap runs, git runs inside it too (workspace read-only).

Weighed and not taken: libgit2 (`pygit2`) runs no filters or hooks, but it is a compiled
dependency, still reads the repository's configuration, and its patches differ from
git's (hunk headers of 5 in 150 commits of this project's history), while apply_patch and
the differential tests take git's output as the reference.

The repository must lie inside the workspace: a `.git` file or link (`gitdir: ...`), a
`commondir`, an entry of the git directory or an alternate object directory that leads
outside it is refused, so that git_diff never shows another repository's files. The files
read to find it and to copy its settings (a `.git` file, `commondir`, `HEAD`, alternates,
`config`) are read confined to the workspace (read_confined): regular files only, never
waited on (a FIFO) and of bounded size; git parses a copy of the configuration.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from typing import Final

from mini_harness.errors import FileRefusedError, GitError
from mini_harness.tools.process import run_bounded
from mini_harness.tools.workspace import Workspace, quote_path

KEPT_SETTINGS: Final = (
    "core.repositoryformatversion",
    "extensions.objectformat",
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.autocrlf",
    "core.eol",
    "core.checkstat",
    "core.trustctime",
)
_KEPT_PATTERN: Final = "^(" + "|".join(re.escape(key) for key in KEPT_SETTINGS) + ")$"
_PLAIN_WORD: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")
_NOT_LINKED: Final = frozenset({"config", "config.worktree", "hooks", "commondir", "HEAD"})
_SMALL_FILE: Final = 4096  # a `.git` file, HEAD, commondir: a path or a ref
_MAX_CONFIG: Final = 1 << 20


def _outside(what: str, real: str) -> GitError:
    return GitError(
        ".",
        f"The repository's {what} leads outside the workspace (to {quote_path(real)}); the "
        "git tools only read a repository inside it",
    )


def _read(workspace: Workspace, path: str, limit: int) -> bytes:
    """The bytes of the repository's file `path`, read confined to the workspace (see
    read_confined): a regular file of at most `limit` bytes, opened without following a
    link or waiting on a FIFO."""
    real = os.path.realpath(path)
    if not workspace.contains(real):
        raise _outside(quote_path(os.path.basename(path)), real)
    shown = quote_path(workspace.relative(real))
    try:
        return workspace.read(real, limit)
    except FileRefusedError as refused:
        if refused.outside:
            raise _outside(shown, real) from None
        if refused.kind is not None:
            problem = f"is a {refused.kind}, not a regular file"
        else:
            problem = f"is too large ({refused.size:,} bytes; at most {limit:,})"
        raise GitError(".", f"The repository's {shown} {problem}") from None
    except OSError as exc:
        raise GitError(
            ".", f"The repository's {shown} cannot be read: {exc.strerror or exc}"
        ) from None


def _read_small(workspace: Workspace, path: str) -> str:
    """A pointer file's text (a `.git` file, HEAD, commondir, alternates)."""
    return _read(workspace, path, _SMALL_FILE).decode("utf-8", "surrogateescape").strip()


def repository_dir(workspace: Workspace) -> tuple[str, str]:
    """The resolved git directory of the workspace and its common directory (the same
    unless it is a linked worktree's); GitError when there is none or it leads outside."""
    root = str(workspace.root)
    dot_git = os.path.join(root, ".git")
    try:
        mode = os.lstat(dot_git).st_mode
    except FileNotFoundError:
        raise GitError(
            ".",
            "The workspace is not a git repository (git looks in the workspace root "
            "only, never above it)",
        ) from None
    if stat.S_ISREG(mode):
        pointer = _read_small(workspace, dot_git)
        if not pointer.startswith("gitdir:"):
            raise GitError(".", "The workspace's .git file does not say `gitdir: PATH`")
        target = os.path.join(root, pointer.removeprefix("gitdir:").strip())
        gitdir = os.path.realpath(target)
        what = "`.git` file"
    else:
        gitdir = os.path.realpath(dot_git)
        what = "`.git` link"
    if not workspace.contains(gitdir):
        raise _outside(what, gitdir)
    if not os.path.isdir(gitdir):
        raise GitError(".", f"The repository's git directory {quote_path(gitdir)} is missing")
    common = gitdir
    if os.path.lexists(os.path.join(gitdir, "commondir")):
        pointer = _read_small(workspace, os.path.join(gitdir, "commondir"))
        common = os.path.realpath(os.path.join(gitdir, pointer))
        if not workspace.contains(common):
            raise _outside("commondir", common)
    return gitdir, common


def _entries(workspace: Workspace, gitdir: str, common: str) -> dict[str, str]:
    """What the private git directory links to: the common directory's entries, then the
    git directory's own, each resolved and checked to be inside the workspace."""
    linked: dict[str, str] = {}
    for directory in dict.fromkeys((common, gitdir)):
        for name in sorted(os.listdir(directory)):
            if name in _NOT_LINKED or (directory == common != gitdir and name == "index"):
                continue
            real = os.path.realpath(os.path.join(directory, name))
            if not workspace.contains(real):
                raise _outside(f"{quote_path(name)} entry", real)
            linked[name] = real
    alternates = os.path.join(linked.get("objects", ""), "info", "alternates")
    if "objects" in linked and os.path.isfile(alternates):
        for line in _read_small(workspace, alternates).splitlines():
            if line.strip() and not line.startswith("#"):
                real = os.path.realpath(os.path.join(linked["objects"], line.strip()))
                if not workspace.contains(real):
                    raise _outside("alternate object directory", real)
    return linked


def kept_settings(config: str, env: Mapping[str, str], cwd: str, timeout: float) -> str:
    """The `config` text of the private directory: KEPT_SETTINGS as the repository's
    configuration file sets them (read by git, which only parses it), plain words only."""
    # In an empty directory, with no repository above it, git reads the one file named.
    alone = {**env, "GIT_CEILING_DIRECTORIES": os.path.dirname(cwd)}
    listed = run_bounded(
        ["git", "config", "--file", config, "--null", "--get-regexp", _KEPT_PATTERN],
        cwd=cwd,
        env=alone,
        timeout=timeout,
    )
    values: dict[str, str] = {}
    if listed.exit_code == 0 and not listed.stdout.truncated:
        for entry in listed.stdout.text().split("\0"):
            key, _, value = entry.partition("\n")
            if key in KEPT_SETTINGS and _PLAIN_WORD.fullmatch(value):
                values[key] = value  # the last one wins, as in git
    sections: dict[str, list[str]] = {"core": ["\tbare = false"]}
    for key, value in values.items():
        section, name = key.split(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}")
    return "".join(
        f"[{title}]\n" + "".join(f"{line}\n" for line in lines) for title, lines in sections.items()
    )


_OBJECT_ID: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF_NAME: Final = re.compile(r"refs/[A-Za-z0-9._/-]{1,200}")


def repository_head(workspace: Workspace) -> tuple[str | None, str | None]:
    """The commit the workspace's repository has checked out and its branch, read from
    the repository's own files: git is not run, so nothing the repository configures can
    run. (None, branch) before the first commit, or when the branch's ref is not a plain
    file or a packed-refs line (a reftable repository); (commit, None) with HEAD detached.
    GitError when the workspace is not a repository (or its files lead outside it)."""
    gitdir, common = repository_dir(workspace)
    head_path = os.path.realpath(os.path.join(gitdir, "HEAD"))
    if not workspace.contains(head_path):
        raise _outside("HEAD", head_path)
    head = _read_small(workspace, head_path) if os.path.isfile(head_path) else ""
    if _OBJECT_ID.fullmatch(head):
        return head, None
    ref = head.removeprefix("ref:").strip() if head.startswith("ref:") else ""
    if not _REF_NAME.fullmatch(ref) or ".." in ref:
        return None, None
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return _resolved(workspace, common, ref), branch


def _resolved(workspace: Workspace, common: str, ref: str, depth: int = 0) -> str | None:
    """The object id a branch or tag `ref` names (following symbolic refs a few levels),
    from its loose file or packed-refs; None if neither says."""
    loose = os.path.realpath(os.path.join(common, ref))
    if workspace.contains(loose) and os.path.isfile(loose):
        value = _read_small(workspace, loose)
        if _OBJECT_ID.fullmatch(value):
            return value
        target = value.removeprefix("ref:").strip() if value.startswith("ref:") else ""
        if depth < 5 and _REF_NAME.fullmatch(target) and ".." not in target:
            return _resolved(workspace, common, target, depth + 1)
        return None
    packed = os.path.realpath(os.path.join(common, "packed-refs"))
    if not (workspace.contains(packed) and os.path.isfile(packed)):
        return None
    with open(packed, "rb") as handle:
        while line := handle.readline(_SMALL_FILE):  # bounded, whatever the file holds
            object_id, _, name = line.decode("utf-8", "replace").strip().partition(" ")
            if name == ref and _OBJECT_ID.fullmatch(object_id):
                return object_id
    return None


@contextlib.contextmanager
def private_git_dir(workspace: Workspace, env: Mapping[str, str], timeout: float) -> Iterator[str]:
    """A git directory for the workspace's repository with a configuration of our own;
    removed on exit. Its parent is an empty scratch directory."""
    gitdir, common = repository_dir(workspace)
    linked = _entries(workspace, gitdir, common)
    with tempfile.TemporaryDirectory(prefix="mini-harness-git-") as scratch:
        # git parses a copy, read confined: a FIFO there would keep it waiting.
        config = os.path.join(scratch, "repository-config")
        if os.path.lexists(os.path.join(common, "config")):
            with open(config, "wb") as handle:
                handle.write(_read(workspace, os.path.join(common, "config"), _MAX_CONFIG))
        settings = kept_settings(config, env, scratch, timeout)
        private = os.path.join(scratch, "git")
        os.mkdir(private)
        for name, real in linked.items():
            os.symlink(real, os.path.join(private, name))
        head = os.path.realpath(os.path.join(gitdir, "HEAD"))
        if not workspace.contains(head):
            raise _outside("HEAD", head)
        with open(os.path.join(private, "HEAD"), "w", encoding="utf-8") as handle:
            handle.write((_read_small(workspace, head) if os.path.isfile(head) else "") + "\n")
        with open(os.path.join(private, "config"), "w", encoding="utf-8") as handle:
            handle.write(settings)
        yield private
