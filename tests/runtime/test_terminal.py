"""`printable`: text shown on a terminal with every character it would act on escaped."""

from __future__ import annotations

import sys
import unicodedata

import orjson
import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from mini_harness.runtime.terminal import printable, printable_json


class TestPrintable:
    @pytest.mark.parametrize(
        ("text", "shown"),
        [
            ("\x1b[2J", "\\x1b[2J"),  # ESC: erase the screen
            ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),  # OSC 52 ends with BEL
            ("\x9b31m", "\\x9b31m"),  # a C1 CSI
            ("\x7f\x08", "\\x7f\\x08"),  # DEL, backspace
            ("abc\u202edef", "abc\\u202edef"),  # right-to-left override
            ("\u2066x\u2069", "\\u2066x\\u2069"),  # bidi isolates
            ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),  # zero-width space, byte order mark
            ("tag\U000e0041", "tag\\U000e0041"),  # a tag character
            ("line\u2028sep", "line\\u2028sep"),
            ("\ud800", "\\ud800"),  # a lone surrogate
            ("over\rwrite", "over\\x0dwrite"),  # a lone carriage return rewrites the line
        ],
    )
    def test_hidden_characters_are_shown(self, text: str, shown: str) -> None:
        """Each character a terminal acts on, or that hides or reorders text, is escaped."""
        assert printable(text) == shown

    def test_every_hidden_character_is_shown_in_plain_text(self) -> None:
        """Each of the characters to escape, as the regex engine's Unicode tables know
        them (they may be newer than Python's), is escaped inside otherwise plain text."""
        everything = "".join(map(chr, range(sys.maxunicode + 1)))
        hidden = regex.findall(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]", everything, regex.V1)
        assert len(hidden) > 2000
        missed = [c for c in hidden if printable(f"a{c}b", multiline=False) == f"a{c}b"]
        assert missed == []

    def test_lines_keep_their_layout(self) -> None:
        """Newlines, tabs and CRLF line ends stay in multi-line text; letters of any script
        are left alone."""
        text = "def f():\r\n\treturn 'héllo, 世界, مرحبا'\n"
        assert printable(text) == text

    def test_one_line(self) -> None:
        """multiline=False escapes newlines and tabs too."""
        assert printable("a\nb\tc", multiline=False) == "a\\x0ab\\x09c"

    @given(st.text())
    def test_result_is_inert_and_stable(self, text: str) -> None:
        """Whatever the text, the result holds no control or format character but newline
        and tab, and escaping it again changes nothing."""
        shown = printable(text)
        hidden = {"Cc", "Cf", "Zl", "Zp", "Cs"}
        left = shown.replace("\r\n", "\n")
        assert all(c in "\n\t" or unicodedata.category(c) not in hidden for c in left)
        assert printable(shown) == shown


class TestColoursAndJson:
    def test_colours_keep_only_our_own_codes(self) -> None:
        """With colours, the codes our views write pass; any other sequence is escaped."""
        ours = "\x1b[1mRun 1\x1b[0m \x1b[31mfailed\x1b[0m"
        assert printable(ours, colours=True) == ours
        hostile = "\x1b[8mhidden\x1b]52;c;aGk=\x07\x1b[2J\u202e"
        assert printable(hostile, colours=True) == printable(hostile)

    @given(st.text())
    def test_json_keeps_its_value_and_shows_nothing_a_terminal_acts_on(self, text: str) -> None:
        """printable_json writes what JSON leaves raw as \\u escapes: the same value."""
        document = orjson.dumps({text: [text]}, option=orjson.OPT_NON_STR_KEYS).decode()
        shown = printable_json(document)
        assert orjson.loads(shown) == {text: [text]}
        hidden = {"Cc", "Cf", "Zl", "Zp", "Cs"}
        assert all(unicodedata.category(c) not in hidden for c in shown)

    @given(st.lists(st.text(), min_size=1, max_size=4))
    def test_json_lines_are_escaped_on_every_line(self, texts: list[str]) -> None:
        """JSON text of many lines (replay --json writes its calls in batches) is escaped
        on every line, not only when the first one needs it: each line keeps its value."""
        lines = [orjson.dumps({"output": text}).decode() for text in texts]
        shown = printable_json("\n".join(lines))
        assert [orjson.loads(line)["output"] for line in shown.split("\n")] == texts
        hidden = {"Cc", "Cf", "Zl", "Zp", "Cs"}
        assert all(c == "\n" or unicodedata.category(c) not in hidden for c in shown)
