from __future__ import annotations

import re

import pytest

from mini_harness.tools.globs import IgnoreFile, PathGlob, glob_regex, is_ignored, parse_rule


class TestGlob:
    @pytest.mark.parametrize(
        ("pattern", "matching", "not_matching"),
        [
            ("*.py", ["a.py", ".py"], ["a/b.py", "a.pyc"]),
            ("?.md", ["a.md"], ["ab.md", "/.md"]),
            ("src/*.py", ["src/a.py"], ["src/x/a.py", "lib/a.py"]),
            ("**/test_*.py", ["test_a.py", "x/y/test_a.py"], ["x/atest_a.py"]),
            ("src/**", ["src/a", "src/a/b"], ["src", "lib/src/a"]),
            ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/xb", "b"]),
            ("[ab]c", ["ac", "bc"], ["cc", "/c"]),
            ("[!ab]c", ["cc"], ["ac", "/c"]),
            ("[]]x", ["]x"], ["ax"]),
            ("[a", ["[a"], ["a"]),
            (r"\*.txt", ["*.txt"], ["a.txt"]),
            ("a+b(c).txt", ["a+b(c).txt"], ["aab(c).txt"]),
        ],
    )
    def test_patterns(self, pattern: str, matching: list[str], not_matching: list[str]) -> None:
        """*, ?, ** and classes match the way a shell and git do, segment by segment."""
        regex = re.compile(glob_regex(pattern))
        assert [p for p in matching if regex.match(p)] == matching
        assert [p for p in not_matching if regex.match(p)] == []

    def test_braces_only_for_tool_globs(self) -> None:
        """{a,b} are alternatives in a tool glob, plain characters in .gitignore."""
        assert re.match(glob_regex("*.{py,md}", braces=True), "x.md")
        assert not re.match(glob_regex("*.{py,md}"), "x.md")
        assert re.match(glob_regex("x{", braces=True), "x{")

    @pytest.mark.parametrize(
        ("pattern", "path", "expected"),
        [
            ("*.py", "src/deep/a.py", True),  # no slash: the file name
            ("src/*.py", "src/a.py", True),  # slash: the whole relative path
            ("src/*.py", "x/src/a.py", False),
            ("/src/*.py", "src/a.py", True),  # a leading slash changes nothing
        ],
    )
    def test_path_glob(self, pattern: str, path: str, expected: bool) -> None:
        """A tool glob matches names unless it contains a slash."""
        assert PathGlob(pattern).matches(path) is expected


class TestGitignore:
    @pytest.mark.parametrize("line", ["", "   ", "# comment", "!", "/"])
    def test_blank_and_comment_lines(self, line: str) -> None:
        """Blank lines, comments and empty patterns are no rules."""
        assert parse_rule(line) is None

    @pytest.mark.parametrize(
        ("text", "path", "is_dir", "ignored"),
        [
            ("*.log", "a/b/x.log", False, True),
            ("*.log\n!keep.log", "a/keep.log", False, False),
            ("!keep.log\n*.log", "a/keep.log", False, True),  # the last match wins
            ("out/", "out", True, True),
            ("out/", "out", False, False),  # dir-only does not match a file
            ("/top.txt", "top.txt", False, True),
            ("/top.txt", "a/top.txt", False, False),  # anchored
            ("a/b.txt", "x/a/b.txt", False, False),  # a middle slash anchors too
            ("docs/**/*.tmp", "docs/x/y/z.tmp", False, True),
            ("docs/**/*.tmp", "docs/z.tmp", False, True),
            (r"\#hash", "#hash", False, True),
            (r"\!bang", "!bang", False, True),
            ("trailing.txt   ", "trailing.txt", False, True),
            ("space\\ ", "space ", False, True),
            ("**/node", "deep/er/node", True, True),
            ("*.txt\r", "x.txt", False, True),
        ],
    )
    def test_rules(self, text: str, path: str, is_dir: bool, ignored: bool) -> None:
        """The documented .gitignore subset decides like git for each kind of line."""
        assert is_ignored([IgnoreFile.parse("", text)], path, is_dir=is_dir) is ignored

    def test_nested_file_is_relative_to_its_directory_and_wins(self) -> None:
        """A deeper .gitignore matches paths relative to itself and overrides the root."""
        files = [IgnoreFile.parse("", "*.gen"), IgnoreFile.parse("pkg", "/keep.gen\n!/keep.gen")]
        assert is_ignored(files, "pkg/keep.gen", is_dir=False) is False
        assert is_ignored(files, "pkg/sub/keep.gen", is_dir=False) is True
        assert is_ignored(files, "other.gen", is_dir=False) is True
