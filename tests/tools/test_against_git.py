"""The .gitignore subset agrees with git itself on the cases it claims to support."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.tools import default_registry

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GITIGNORE = (
    """\
# comments and blank lines

*.o
!important.o
/root-only.txt
logs/
docs/**/draft-*.md
a/**/z
cache?/
[Bb]ackup*
!/keep/[Bb]ackup-1
\\#literal
nested/deep/
"""
    + "trailing.txt   \n"
)  # trailing spaces are trimmed
NESTED = {
    "sub/.gitignore": "*.tmp\n!sub-keep.tmp\n/local.txt\n",
    "sub/inner/.gitignore": "!*.tmp\n",
}
FILES = [
    "x.o",
    "important.o",
    "lib/y.o",
    "lib/important.o",
    "root-only.txt",
    "src/root-only.txt",
    "logs/a.txt",
    "src/logs/b.txt",
    "logs.txt",
    "docs/draft-1.md",
    "docs/v1/draft-2.md",
    "docs/v1/x/draft-3.md",
    "docs/final.md",
    "a/z",
    "a/b/z",
    "a/b/c/z",
    "a/zz",
    "cache1/f",
    "cache12/f",
    "cachex.txt",
    "Backup.zip",
    "backup2",
    "keep/Backup-1",
    "keep/backup-1",
    "#literal",
    "trailing.txt",
    "nested/deep/f",
    "deep/f",
    "sub/a.tmp",
    "sub/sub-keep.tmp",
    "sub/local.txt",
    "sub/x/local.txt",
    "sub/inner/b.tmp",
    "sub/inner/c.txt",
    "plain.txt",
]


def git_visible(root: Path) -> list[str]:
    """Untracked, not ignored files as git sees them."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        check=True,
        capture_output=True,
        env=env,
    ).stdout
    shutil.rmtree(root / ".git")
    return sorted(p for p in out.decode().split("\0") if p)


class TestAgreesWithGit:
    def test_listing_matches_git_ls_files(self, tmp_path: Path) -> None:
        """list_files hides exactly the files git's own ignore rules hide."""
        (tmp_path / ".gitignore").write_text(GITIGNORE)
        for name, text in NESTED.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        for name in FILES:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(name)
        expected = git_visible(tmp_path)
        runtime = ToolRuntime(default_registry(tmp_path), MemorySink())
        output: Any = runtime.dispatch("list_files", {}).output
        assert sorted(f["path"] for f in output["files"]) == expected
        # A sanity check that the table exercises both outcomes.
        assert "important.o" in expected
        assert "x.o" not in expected
