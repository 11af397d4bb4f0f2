from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mini_harness import ToolHandlerError, ToolRuntime

# Every file of the fixture workspace that list_files must show, in its order.
VISIBLE = [
    ".gitignore",
    "README.md",
    "big.txt",
    "data/image.png",
    "data/latin1.txt",
    "docs/guide.md",
    "keep.log",
    "link_inside",
    "src/app.py",
    "src/only-root.txt",
    "src/pkg/__init__.py",
    "src/pkg/deep/mod.py",
    "sub/.gitignore",
    "sub/code.py",
    "ünïcødé/日本語.txt",
]


def listing(runtime: ToolRuntime, **tool_input: Any) -> dict[str, Any]:
    output = runtime.dispatch("list_files", tool_input).output
    assert isinstance(output, dict)
    return output


def paths(output: dict[str, Any]) -> list[str]:
    return [entry["path"] for entry in output["files"]]


class TestListing:
    def test_whole_workspace(self, runtime: ToolRuntime, root: Path) -> None:
        """The root listing shows every visible file, sorted, with its size in bytes."""
        output = listing(runtime)
        assert output == {
            "path": ".",
            "files": [{"path": p, "size": (root / p).stat().st_size} for p in VISIBLE],
            "count": len(VISIBLE),
            "truncated": False,
            "deeperDirs": [],
        }

    @pytest.mark.parametrize(
        "hidden",
        [
            ".venv/bin/activate",  # skipped by name
            "node_modules/lib/index.js",
            "dist/bundle.js",
            "build/out.txt",
            "src/__pycache__/app.cpython-311.pyc",
            "debug.log",  # *.log
            "build-out/a.txt",  # build-out/ (directory pattern)
            "only-root.txt",  # /only-root.txt (anchored)
            "docs/a/b/x.tmp",  # docs/**/*.tmp
            "secret/token.txt",  # secret/
            "sub/notes.txt",  # *.txt in sub/.gitignore
            "link_outside",  # symlink leaving the workspace
            "link_dir",  # symlink to a directory: not followed
            "loop_a",  # symlink loop
            "pipe",  # FIFO
        ],
    )
    def test_skipped(self, runtime: ToolRuntime, hidden: str) -> None:
        """Skipped directories, .gitignore'd paths, escaping links and special files are absent."""
        assert not [p for p in paths(listing(runtime)) if p.startswith(hidden)]

    def test_subdirectory_paths_stay_workspace_relative(self, runtime: ToolRuntime) -> None:
        """Listing a subdirectory returns paths read_file accepts as they are."""
        output = listing(runtime, path="src/pkg/")
        assert output["path"] == "src/pkg"
        assert paths(output) == ["src/pkg/__init__.py", "src/pkg/deep/mod.py"]

    def test_explicit_skipped_directory_is_listed(self, runtime: ToolRuntime) -> None:
        """Asking for node_modules by name lists it: the skip list is for walks from above."""
        assert paths(listing(runtime, path="node_modules")) == ["node_modules/lib/index.js"]

    def test_directory_symlink_inside_can_be_listed(self, runtime: ToolRuntime) -> None:
        """A directory reached through an inner symlink is listed under the link's name."""
        assert paths(listing(runtime, path="link_dir", glob="*.py"))[:1] == ["link_dir/app.py"]

    def test_a_file_is_not_a_directory(self, runtime: ToolRuntime) -> None:
        """Listing a file says it is not a directory."""
        with pytest.raises(ToolHandlerError) as caught:
            runtime.dispatch("list_files", {"path": "README.md"})
        assert caught.value.message == (
            'Tool list_files failed: WorkspaceError: Path "README.md" is a regular file, '
            "not a directory"
        )


class TestFilters:
    @pytest.mark.parametrize(
        ("tool_input", "expected"),
        [
            (
                {"glob": "*.py"},
                ["src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "sub/code.py"],
            ),
            ({"glob": "*.{md,log}"}, ["README.md", "docs/guide.md", "keep.log"]),
            ({"glob": "src/*.py"}, ["src/app.py"]),
            ({"glob": "src/**/*.py"}, ["src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py"]),
            ({"path": "src", "glob": "pkg/**"}, ["src/pkg/__init__.py", "src/pkg/deep/mod.py"]),
            (
                {"glob": "[!.]*.txt"},
                ["big.txt", "data/latin1.txt", "src/only-root.txt", "ünïcødé/日本語.txt"],
            ),
            ({"glob": "日本語.*"}, ["ünïcødé/日本語.txt"]),
        ],
    )
    def test_glob(
        self, runtime: ToolRuntime, tool_input: dict[str, Any], expected: list[str]
    ) -> None:
        """A glob without '/' matches names, with '/' paths below the listed directory."""
        assert paths(listing(runtime, **tool_input)) == expected

    def test_max_depth_names_the_closed_directories(self, runtime: ToolRuntime) -> None:
        """maxDepth 1 lists the top files and names the directories it did not enter."""
        output = listing(runtime, maxDepth=1)
        assert paths(output) == [p for p in VISIBLE if "/" not in p]
        assert output["deeperDirs"] == ["data/", "docs/", "src/", "sub/", "ünïcødé/"]

    def test_max_depth_two(self, runtime: ToolRuntime) -> None:
        """maxDepth 2 goes one directory further down."""
        output = listing(runtime, path="src", maxDepth=2)
        assert paths(output) == ["src/app.py", "src/only-root.txt", "src/pkg/__init__.py"]
        assert output["deeperDirs"] == ["src/pkg/deep/"]

    def test_max_results_truncates(self, runtime: ToolRuntime) -> None:
        """maxResults keeps the first files in order and sets truncated."""
        output = listing(runtime, maxResults=3)
        assert paths(output) == VISIBLE[:3]
        assert (output["count"], output["truncated"]) == (3, True)

    def test_exact_max_results_is_not_truncated(self, runtime: ToolRuntime) -> None:
        """When exactly maxResults files exist, nothing was left out."""
        output = listing(runtime, maxResults=len(VISIBLE))
        assert output["truncated"] is False


class TestGitignoreInSubdirectories:
    def test_deeper_gitignore_overrides_and_walks_from_a_subdirectory(
        self, tmp_path: Path, runtime_for: Any
    ) -> None:
        """A nested .gitignore can re-include what the root ignores, also when listed from below."""
        (tmp_path / ".gitignore").write_text("*.gen\n")
        (tmp_path / "a" / "b").mkdir(parents=True)
        (tmp_path / "a" / ".gitignore").write_text("!keep.gen\n")
        for name in ("x.gen", "a/keep.gen", "a/drop.gen", "a/b/keep.gen"):
            (tmp_path / name).write_text("")
        runtime = runtime_for(tmp_path)
        expected = ["a/.gitignore", "a/b/keep.gen", "a/keep.gen"]
        assert paths(listing(runtime)) == [".gitignore", *expected]
        assert paths(listing(runtime, path="a")) == expected
        assert paths(listing(runtime, path="a/b")) == ["a/b/keep.gen"]
