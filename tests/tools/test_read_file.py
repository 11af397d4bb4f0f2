from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mini_harness import ToolHandlerError, ToolRuntime
from mini_harness.errors import FileRefusedError
from mini_harness.tools.read_file import split_lines
from mini_harness.tools.workspace import Workspace

APP = "import os\n\ndef main():\n    return 'needle'\n"


def read(runtime: ToolRuntime, **tool_input: Any) -> dict[str, Any]:
    output = runtime.dispatch("read_file", tool_input).output
    assert isinstance(output, dict)
    return output


def refusal(runtime: ToolRuntime, **tool_input: Any) -> str:
    with pytest.raises(ToolHandlerError) as caught:
        runtime.dispatch("read_file", tool_input)
    prefix = "Tool read_file failed: WorkspaceError: "
    assert caught.value.message.startswith(prefix)
    return caught.value.message.removeprefix(prefix)


class TestReading:
    def test_whole_file(self, runtime: ToolRuntime) -> None:
        """A file comes back whole with its line range and line count."""
        assert read(runtime, path="src/app.py") == {
            "path": "src/app.py",
            "text": APP,
            "startLine": 1,
            "endLine": 4,
            "totalLines": 4,
            "truncated": False,
        }

    def test_line_range(self, runtime: ToolRuntime) -> None:
        """offset and limit pick lines (counted from 1); truncated says more follow."""
        output = read(runtime, path="src/app.py", offset=2, limit=2)
        assert (output["text"], output["startLine"], output["endLine"]) == ("\ndef main():\n", 2, 3)
        assert (output["totalLines"], output["truncated"]) == (4, True)

    def test_range_reaching_the_end(self, runtime: ToolRuntime) -> None:
        """A limit past the end returns the rest and is not truncated."""
        output = read(runtime, path="src/app.py", offset=4, limit=10)
        assert (output["text"], output["endLine"], output["truncated"]) == (
            "    return 'needle'\n",
            4,
            False,
        )

    def test_default_limit(self, tmp_path: Path, runtime_for: Any) -> None:
        """Without a limit at most 2000 lines come back."""
        (tmp_path / "long.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))
        output = read(runtime_for(tmp_path), path="long.txt")
        assert (output["endLine"], output["totalLines"], output["truncated"]) == (2000, 2500, True)
        assert output["text"].endswith("\n2000\n")

    def test_offset_past_the_end(self, runtime: ToolRuntime) -> None:
        """An offset after the last line is an error that gives the line count."""
        assert refusal(runtime, path="README.md", offset=9) == (
            'offset 9 is past the end of "README.md" (2 lines)'
        )

    def test_empty_file(self, runtime: ToolRuntime) -> None:
        """An empty file has no lines and an empty range."""
        output = read(runtime, path="src/pkg/__init__.py")
        assert (output["text"], output["startLine"], output["endLine"]) == ("", 1, 0)
        assert (output["totalLines"], output["truncated"]) == (0, False)

    def test_crlf_is_kept(self, runtime: ToolRuntime) -> None:
        """Line endings come back as they are in the file."""
        output = read(runtime, path="docs/guide.md")
        assert (output["text"], output["totalLines"]) == ("Guide\r\nwith CRLF needle\r\n", 2)

    def test_unicode_path_and_text(self, runtime: ToolRuntime) -> None:
        """Non-ASCII names and contents read as UTF-8."""
        assert read(runtime, path="ünïcødé/日本語.txt")["text"] == "こんにちは needle\n"

    def test_bom_is_dropped(self, tmp_path: Path, runtime_for: Any) -> None:
        """A UTF-8 byte order mark is not part of the text."""
        (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfhi\n")
        assert read(runtime_for(tmp_path), path="bom.txt")["text"] == "hi\n"

    def test_symlink_inside_reads_its_target(self, runtime: ToolRuntime) -> None:
        """A symlink to a file inside the workspace reads that file, under the link's name."""
        output = read(runtime, path="link_inside")
        assert (output["path"], output["text"]) == ("link_inside", APP)

    def test_ignored_file_can_be_read_by_name(self, runtime: ToolRuntime) -> None:
        """Ignore rules hide files from walks, not from an explicit read."""
        assert read(runtime, path="debug.log")["text"] == "needle in an ignored log\n"

    def test_changes_are_seen(self, tmp_path: Path, runtime_for: Any) -> None:
        """Every call reads the file afresh: a change shows up in the next call."""
        (tmp_path / "f.txt").write_text("one\n")
        runtime = runtime_for(tmp_path)
        assert read(runtime, path="f.txt")["text"] == "one\n"
        (tmp_path / "f.txt").write_text("two\n")
        assert read(runtime, path="f.txt")["text"] == "two\n"


class TestRefusals:
    @pytest.mark.parametrize(
        ("path", "message"),
        [
            (
                "data/image.png",
                'File "data/image.png" looks binary (not UTF-8 text); read_file reads text only',
            ),
            (
                "data/latin1.txt",
                'File "data/latin1.txt" looks binary (not UTF-8 text); read_file reads text only',
            ),
            (
                "big.txt",
                'File "big.txt" is 1,100,000 bytes, over read_file\'s limit of 1,048,576 bytes',
            ),
            ("src", 'Path "src" is a directory; use list_files to see inside it'),
            (".", 'Path "." is a directory; use list_files to see inside it'),
            ("missing.txt", 'Path "missing.txt" does not exist'),
            ("README.md/x", 'Path "README.md/x" does not exist'),
        ],
    )
    def test_refused_with_a_clear_message(
        self, runtime: ToolRuntime, path: str, message: str
    ) -> None:
        """Binary, oversized, directory and missing paths are refused saying why."""
        assert refusal(runtime, path=path) == message


class TestSizeLimit:
    def test_a_file_of_exactly_the_limit_is_read(self, tmp_path: Path, runtime_for: Any) -> None:
        """1,048,576 bytes, the documented limit, are read whole."""
        (tmp_path / "f.txt").write_bytes(b"x" * 1023 + b"\n" + b"y" * ((1 << 20) - 1024))
        output = read(runtime_for(tmp_path), path="f.txt", offset=2)
        assert (output["totalLines"], len(output["text"])) == (2, (1 << 20) - 1024)

    def test_one_byte_over_the_limit_is_refused(self, tmp_path: Path, runtime_for: Any) -> None:
        """1,048,577 bytes are refused, the message giving both sizes."""
        (tmp_path / "f.txt").write_bytes(b"x" * ((1 << 20) + 1))
        assert refusal(runtime_for(tmp_path), path="f.txt") == (
            'File "f.txt" is 1,048,577 bytes, over read_file\'s limit of 1,048,576 bytes'
        )

    def test_the_reader_holds_the_limit_on_its_own(self, tmp_path: Path) -> None:
        """Workspace.read, which every tool reads through, takes exactly max_size bytes and
        refuses one more."""
        path = tmp_path / "f.txt"
        path.write_bytes(b"x" * 100)
        assert len(Workspace(tmp_path).read(str(path), 100)) == 100
        path.write_bytes(b"x" * 101)
        with pytest.raises(FileRefusedError) as caught:
            Workspace(tmp_path).read(str(path), 100)
        assert caught.value.size == 101


class TestLines:
    @pytest.mark.parametrize(
        ("text", "lines"),
        [
            ("", []),
            ("a", ["a"]),
            ("a\n", ["a\n"]),
            ("a\nb", ["a\n", "b"]),
            ("a\r\n\nb\n", ["a\r\n", "\n", "b\n"]),
            ("a\x0cb\u2028c\n", ["a\x0cb\u2028c\n"]),
            ("a\rb\r\nc\r", ["a\rb\r\n", "c\r"]),
            ("\x0b\x1c\x1d\x1e\x85\u2029\n\n", ["\x0b\x1c\x1d\x1e\x85\u2029\n", "\n"]),
        ],
    )
    def test_split_on_newline_only(self, text: str, lines: list[str]) -> None:
        """Lines end at "\\n" only, so numbers agree with editors and search_text."""
        assert split_lines(text) == lines
        assert "".join(lines) == text
