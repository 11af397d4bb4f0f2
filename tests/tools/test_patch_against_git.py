"""apply_patch agrees with `git apply`: on repositories built with the shapes real history
has (renames, copies, empty files, modes, missing final newlines, CRLF, BOMs, quoted
names, edits at the start and end of files), for every -U, on drifted copies, a second
time, and undone; and, in thorough mode, on every commit of this project's own history."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest

from .git_differential import Outcome, copy_tree, extract, git, ours, theirs, tree_of, undo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

Files = Mapping[str, "bytes | tuple[bytes, int]"]  # path -> bytes, or (bytes, mode)

LINES = b"".join(b"line %d\n" % n for n in range(1, 41))
BLOCK = b"def f():\n    return 1\n"

# name -> (files before, files after); None deletes a file.
SHAPES: dict[str, tuple[Files, Files]] = {
    "change in the middle": ({"a.txt": LINES}, {"a.txt": LINES.replace(b"line 20\n", b"XX\n")}),
    "prepend a header": ({"a.py": LINES}, {"a.py": b"# header\n" + LINES}),
    "append at the end": ({"a.py": LINES}, {"a.py": LINES + b"tail\n"}),
    "add the final newline": ({"a": LINES + b"last"}, {"a": LINES + b"last\n"}),
    "drop the final newline": ({"a": LINES + b"last\n"}, {"a": LINES + b"last"}),
    "change a last line without newline": ({"a": LINES + b"x"}, {"a": LINES + b"y"}),
    "crlf edit": (
        {"w.txt": LINES.replace(b"\n", b"\r\n")},
        {"w.txt": LINES.replace(b"\n", b"\r\n").replace(b"line 9", b"nine")},
    ),
    "crlf append after a last line without newline": (
        {"w.txt": b"a\r\nb\r\nc"},
        {"w.txt": b"a\r\nb\r\nc\r\nd\r\n"},
    ),
    "dos2unix": ({"w.txt": LINES.replace(b"\n", b"\r\n")}, {"w.txt": LINES}),
    "unix2dos": ({"w.txt": LINES}, {"w.txt": LINES.replace(b"\n", b"\r\n")}),
    "bom at line 1": (
        {"b.txt": b"\xef\xbb\xbf" + LINES},
        {"b.txt": b"\xef\xbb\xbf" + LINES.replace(b"line 1\n", b"first\n")},
    ),
    "new empty file": ({"pkg/mod.py": LINES}, {"pkg/mod.py": LINES, "pkg/__init__.py": b""}),
    "deleted empty file": ({"p/__init__.py": b"", "p/m.py": LINES}, {"p/m.py": LINES}),
    "only empty files": ({"x": LINES}, {"x": LINES, "py.typed": b"", "d/e/__init__.py": b""}),
    "delete a directory's last file": ({"keep": b"k\n", "d/sub/only.txt": LINES}, {"keep": b"k\n"}),
    "new executable": ({"x": b"x\n"}, {"x": b"x\n", "run.sh": (b"#!/bin/sh\necho hi\n", 0o755)}),
    "mode only": ({"run.sh": b"#!/bin/sh\n"}, {"run.sh": (b"#!/bin/sh\n", 0o755)}),
    "mode and content": ({"run.sh": LINES}, {"run.sh": (LINES + b"more\n", 0o755)}),
    "executable stays executable": (
        {"run.sh": (LINES, 0o755)},
        {"run.sh": (LINES.replace(b"line 3\n", b"three\n"), 0o755)},
    ),
    "pure rename": ({"old/name.py": LINES}, {"new/name.py": LINES}),
    "rename with changes": ({"a.py": LINES}, {"b.py": LINES.replace(b"line 30\n", b"x\n")}),
    "rename of an empty file": ({"a/__init__.py": b""}, {"b/__init__.py": b""}),
    "copy with changes": (
        {"src.py": LINES},
        {"src.py": LINES, "dst.py": LINES.replace(b"line 2\n", b"two\n")},
    ),
    "quoted names": (
        {"plain": b"p\n"},
        {"plain": b"p\n", "d d/\xc3\xa9.txt": b"caf\xc3\xa9\n", 'q"t\\.txt': b"q\n"},
    ),
    "delete a file with content": ({"a": LINES, "b": b"b\n"}, {"b": b"b\n"}),
    "repeated lines": (
        {"r.txt": b"x\n" * 30 + b"y\n" + b"x\n" * 30},
        {"r.txt": b"x\n" * 30 + b"Y\n" + b"x\n" * 30},
    ),
    "many hunks": (
        {"m.txt": LINES * 5},
        {"m.txt": (LINES * 5).replace(b"line 7\n", b"seven\n").replace(b"line 33\n", b"")},
    ),
}


def write_files(root: Path, files: Files) -> None:
    for name, value in files.items():
        data, mode = value if isinstance(value, tuple) else (value, 0o644)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)


def repository(base: Path, before: Files, after: Files) -> Path:
    """A repository whose HEAD~1 holds `before` and HEAD `after`."""
    repo = base / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    for files in (before, after):
        for path in repo.iterdir():
            if path.name != ".git":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        write_files(repo, files)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "state")
    return repo


@attrs.define
class Tally:
    """Counts of a differential run (what the closing note reports)."""

    patches: int = 0
    reproduced: int = 0
    git_refused_too: int = 0
    # A hunk that only adds lines, without context, anywhere but exactly at the end it
    # names: git appends it at the end of the file, apply_patch refuses it (it could not
    # tell a second application).
    refused_without_context: int = 0
    second_refused: int = 0
    undone: int = 0
    problems: list[str] = attrs.Factory(list)


def compare(
    work: Path, name: str, before: Path, after: Path | None, patch: bytes, tally: Tally
) -> None:
    """Apply `patch` to copies of `before` with both tools; the outcomes must agree (and
    equal `after` when given); then a second application must be refused and the undo
    must give `before` back."""
    tally.patches += 1
    text = patch.decode("utf-8", "surrogateescape")
    mine, effects = ours(copy_tree(before, work / "ours"), text)
    git_outcome = theirs(copy_tree(before, work / "git"), patch)
    wanted = tree_of(after) if after is not None else git_outcome.tree
    if git_outcome.refused and mine.refused:
        tally.git_refused_too += 1
        return
    if mine.refused and "only adds lines and has no context lines" in mine.refusal:
        tally.refused_without_context += 1
        return
    if mine.tree != wanted:
        tally.problems.append(f"{name}: ours {describe(mine)}, git {describe(git_outcome)}")
        return
    tally.reproduced += 1
    again = ours(work / "ours", text)[0]
    if again.refused:
        tally.second_refused += 1
    else:
        tally.problems.append(f"{name}: a second application was accepted")
    restored = undo(work / "ours", text, effects)
    if restored.tree == tree_of(before):
        tally.undone += 1
    else:
        tally.problems.append(f"{name}: undo gave {describe(restored)}")


def describe(outcome: Outcome) -> str:
    return f"refused ({outcome.refusal[:300]})" if outcome.refused else "a different tree"


@attrs.frozen
class Built:
    repo: Path
    before: Path
    after: Path


@pytest.fixture(name="built", scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Each shape's repository, with its two trees extracted, made once for the module."""
    out = {}
    for index, (name, (before, after)) in enumerate(SHAPES.items()):
        base = tmp_path_factory.mktemp(f"shape{index}")
        repo = repository(base, before, after)
        extract(repo, "HEAD~1", base / "before")
        extract(repo, "HEAD", base / "after")
        out[name] = Built(repo, base / "before", base / "after")
    return out


def run_shape(work: Path, name: str, built: Built, unified: int, drift: bool, tally: Tally) -> None:
    work.mkdir(parents=True)
    patch = git(
        built.repo, "diff", "-M", "-C", "--find-copies-harder", f"-U{unified}", "HEAD~1", "HEAD"
    )
    before: Path = built.before
    after: Path | None = built.after
    if drift:  # the same patch on files that moved on at their start: git decides
        before = copy_tree(built.before, work / "drifted")
        for path in before.rglob("*"):
            if path.is_file() and path.stat().st_size and b"\r" not in path.read_bytes():
                path.write_bytes(b"drift 1\ndrift 2\n" + path.read_bytes())
        after = None
    label = f"{name} -U{unified}{' drifted' if drift else ''}"
    compare(work, label, before, after, patch, tally)


@pytest.mark.parametrize("unified", [0, 1, 3])
@pytest.mark.parametrize("drift", [False, True])
def test_shapes_agree_with_git_apply(
    tmp_path: Path, built: dict[str, Built], unified: int, drift: bool
) -> None:
    """Every shape, applied with apply_patch and with git apply: the same tree or both
    refuse; a second application and the undo behave."""
    tally = Tally()
    for index, name in enumerate(SHAPES):
        run_shape(tmp_path / str(index), name, built[name], unified, drift, tally)
    assert tally.problems == []
    assert tally.reproduced + tally.git_refused_too + tally.refused_without_context == (
        tally.patches
    )
    if unified or not drift:
        assert tally.refused_without_context == 0
    assert tally.second_refused == tally.undone == tally.reproduced
    if unified and not drift:
        assert tally.reproduced == len(SHAPES)


# An entry inserted into a list of entries like it: the lines it adds start as the
# context after them does, so after it is applied its old lines are found where it says
# (as the start of its new lines). A pure insertion, so only with context (-U1 and up).
LIKE_ENTRIES = b"items = [\n    (\n        1,\n    ),\n    (\n        2,\n    ),\n]\n"
INSERTED = LIKE_ENTRIES.replace(
    b"    (\n        2,", b"    (\n        3,\n    ),\n    (\n        2,"
)


@pytest.mark.parametrize("unified", [1, 2, 3])
def test_an_entry_inserted_among_like_entries_applies_once(tmp_path: Path, unified: int) -> None:
    """git takes such a patch a second time; apply_patch refuses it at every -U."""
    base = tmp_path / "shape"
    repo = repository(base, {"l.py": LIKE_ENTRIES}, {"l.py": INSERTED})
    extract(repo, "HEAD~1", base / "before")
    extract(repo, "HEAD", base / "after")
    tally = Tally()
    run_shape(
        tmp_path / "run",
        "like entries",
        Built(repo, base / "before", base / "after"),
        unified,
        False,
        tally,
    )
    assert tally.problems == []
    assert tally.reproduced == tally.second_refused == tally.undone == 1


def own_history(base: Path) -> Path | None:
    """A clone of this project's own repository (no network: a local clone), or None
    when the tests do not run from a git checkout."""
    here = Path(__file__).resolve().parent
    found = git(here, "rev-parse", "--git-common-dir", check=False)
    if found.startswith(b"\0failed\0"):
        return None
    source = (here / found.decode().strip()).resolve()
    clone = base / "history"
    git(base, "clone", "-q", "--no-checkout", str(source), str(clone))
    return clone


def skipped_change(repo: Path, commit: str) -> bool:
    """True for a commit that changes a symlink, a submodule or a binary file (apply_patch
    refuses those)."""
    raw = git(repo, "diff", "--raw", "--numstat", f"{commit}~1", commit).decode()
    return any(
        line.startswith("-\t-\t")
        or (line.startswith(":") and ("120000" in line or "160000" in line))
        for line in raw.splitlines()
    )


def run_history(tmp_path: Path, count: int | None, unified: int) -> tuple[Tally, int]:
    """Each of the last `count` commits (all with None) of this project's history, its
    `git diff` applied to its parent: (the tally, how many commits were skipped)."""
    repo = own_history(tmp_path)
    if repo is None:
        pytest.skip("not run from a git checkout")
    listing = ["rev-list", "--no-merges", "--min-parents=1", "HEAD"]
    commits = git(repo, *listing, *(["-n", str(count)] if count else [])).decode().split()
    tally, skipped = Tally(), 0
    for index, commit in enumerate(commits):
        if skipped_change(repo, commit):
            skipped += 1
            continue
        work = tmp_path / str(index)
        # Only the files the commit touches: the rest of the tree is not the patch's.
        touched = git(repo, "diff", "--no-renames", "--name-only", "-z", f"{commit}~1", commit)
        paths = [name.decode("utf-8", "surrogateescape") for name in touched.split(b"\0") if name]
        extract(repo, f"{commit}~1", work / "before", paths)
        extract(repo, commit, work / "after", paths)
        patch = git(repo, "diff", f"-U{unified}", f"{commit}~1", commit)
        if patch:
            compare(work, commit[:12], work / "before", work / "after", patch, tally)
        shutil.rmtree(work)
    return tally, skipped


def test_recent_history_agrees_with_git(tmp_path: Path) -> None:
    """The last ten commits of this project reproduce git's trees, refuse a second
    application and undo."""
    tally, _ = run_history(tmp_path, 10, 3)
    assert tally.problems == []
    assert tally.reproduced == tally.second_refused == tally.undone == tally.patches


@pytest.mark.thorough
@pytest.mark.parametrize("unified", [3, 1])
def test_all_history_agrees_with_git(tmp_path: Path, unified: int) -> None:
    """Every commit of this project's history (without symlink or binary changes): the
    tree git made, a second application refused, the undo giving the parent back."""
    tally, skipped = run_history(tmp_path, None, unified)
    print(f"\n-U{unified}: {tally}, skipped {skipped}")
    assert tally.problems == []
    assert tally.reproduced == tally.second_refused == tally.undone == tally.patches
