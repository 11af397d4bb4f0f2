"""Fuzzed round trips: a file and a random edit of it, the edit as `git diff` prints it
(any -U), applied by apply_patch (the edited bytes, or refused as git refuses), applied
again (refused) and undone (the original bytes)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .git_differential import GIT_ENV, copy_tree, ours, theirs, undo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

STATS = {"patches": 0}  # how many examples made a patch (the test checks some did)
WORDS = ["a", "b", "c", "", "def f():", "    return 1", "\ufeffa", "x y"]


@st.composite
def text_files(draw: st.DrawFn) -> bytes:
    """File bytes: a few lines from a small vocabulary (so lines repeat), LF or CRLF or
    mixed endings, a final newline or not, a BOM or not."""
    lines = draw(st.lists(st.sampled_from(WORDS[:6] + WORDS[7:]), max_size=25))
    endings = draw(st.sampled_from(["lf", "crlf", "mixed"]))
    out = []
    for index, line in enumerate(lines):
        crlf = endings == "crlf" or (endings == "mixed" and draw(st.booleans()))
        last = index == len(lines) - 1
        out.append(line + ("" if last and draw(st.booleans()) else "\r\n" if crlf else "\n"))
    text = "".join(out)
    if draw(st.booleans()) and text:
        text = "\ufeff" + text
    return text.encode()


@st.composite
def edits(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A file and a changed copy: lines inserted, deleted or replaced, the final newline
    added or dropped, line endings changed."""
    before = draw(text_files())
    lines = before.decode().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "final", "endings"]))
        at = draw(st.integers(0, len(lines)))
        word = draw(st.sampled_from(WORDS)) + draw(st.sampled_from(["\n", "\r\n"]))
        if kind == "insert":
            lines.insert(at, word)
        elif kind in ("delete", "replace") and at < len(lines):
            lines[at : at + 1] = [word] if kind == "replace" else []
        elif kind == "final" and lines:
            last = lines[-1]
            lines[-1] = last.rstrip("\r\n") if last.endswith("\n") else last + "\n"
        elif kind == "endings" and at < len(lines) and lines[at].endswith("\n"):
            body = lines[at].rstrip("\r\n")
            lines[at] = body + ("\n" if lines[at].endswith("\r\n") else "\r\n")
    return before, "".join(lines).encode()


def round_trip(before: bytes, after: bytes, unified: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for side, data in (("a", before), ("b", after)):
            (base / side).mkdir()
            (base / side / "f.txt").write_bytes(data)
        patch = subprocess.run(
            ["git", "diff", "--no-index", f"-U{unified}", "a/f.txt", "b/f.txt"],
            cwd=base,
            env=GIT_ENV,
            capture_output=True,
            check=False,
        ).stdout
        if b"@@" not in patch:  # identical, or git saw a binary file
            return
        STATS["patches"] += 1
        patch = patch.replace(b"a/a/f.txt", b"a/f.txt").replace(b"b/b/f.txt", b"b/f.txt")
        text = patch.decode()
        work = copy_tree(base / "a", base / "ours")
        mine, effects = ours(work, text)
        if mine.refused:
            if "only adds lines and has no context lines" not in mine.refusal:
                assert theirs(copy_tree(base / "a", base / "git"), patch).refused, mine.refusal
            return
        if unified:
            assert (work / "f.txt").read_bytes() == after
        elif (work / "f.txt").read_bytes() != after:
            # Without context git places a hunk by the file's ends, sometimes not as meant:
            # apply_patch either does as meant or as git does. (It is right where git
            # refuses "-1,0": an insertion after line 1, which git takes for the start.)
            assert mine.tree == theirs(copy_tree(base / "a", base / "git"), patch).tree
        if not ours(copy_tree(work, base / "again"), text)[0].refused:
            # Only where the edited file is a file the patch fits again, as git agrees.
            assert not theirs(copy_tree(work, base / "git-again"), patch).refused
        restored = undo(work, text, effects)
        assert not restored.refused, restored.refusal
        assert (work / "f.txt").read_bytes() == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit=edits(), unified=st.sampled_from([0, 1, 3]))
def test_round_trips(edit: tuple[bytes, bytes], unified: int) -> None:
    """A random edit applies as git diff printed it, once, and undoes."""
    round_trip(*edit, unified)


def test_the_round_trips_made_patches() -> None:
    """The fuzz above really produced patches (it runs first in this module)."""
    assert STATS["patches"] > 20


@pytest.mark.thorough
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit=edits(), unified=st.sampled_from([0, 1, 3]))
def test_many_round_trips(edit: tuple[bytes, bytes], unified: int) -> None:
    """The same, 2,000 times."""
    round_trip(*edit, unified)
