"""A provider's API key is redacted as given and in the copies a model may write instead
(events/redaction.py says how far that goes), in transcripts and in streamed text."""

from __future__ import annotations

import pytest

from mini_harness.transcripts import Redactor

KEY = "sk-ant-api03-Zk81mQp4Rw7sLx2NvB9cHj5TyF0gDe6U"


@pytest.fixture(name="redactor")
def _redactor() -> Redactor:
    return Redactor.from_config(keys=[KEY])


def changed(text: str, at: int, to: str = "#") -> str:
    return text[:at] + to + text[at + 1 :]


class TestCopiesOfAKey:
    @pytest.mark.parametrize(
        "copy",
        [
            KEY,
            KEY.upper(),
            KEY.lower(),
            changed(KEY, 25, "Q"),  # a character changed
            KEY[:30] + "x" + KEY[30:],  # one added
            KEY[:12] + KEY[13:],  # one dropped
            changed(changed(KEY, 5, "Q"), 33, "Q"),  # two, far apart
            KEY[17:36],  # any 19 consecutive characters past the label
            KEY[:-1].swapcase(),
        ],
        ids=[
            "exact",
            "upper",
            "lower",
            "changed",
            "added",
            "dropped",
            "two-changed",
            "19-characters",
            "swapped-case-cut",
        ],
    )
    def test_copy_is_redacted_with_its_run(self, redactor: Redactor, copy: str) -> None:
        """A copy is replaced together with the run of key characters it stands in."""
        text = f'id "resp_{copy}xyz", then: {copy}.'
        assert redactor.redact_text(text) == 'id "[REDACTED]", then: [REDACTED].'

    @pytest.mark.parametrize(
        "text",
        [
            " ".join(KEY[i : i + 5] for i in range(0, len(KEY), 5)),  # spelled out in pieces
            KEY[::-1],
            "sk-ant-api03-...",  # what a key looks like, written in documentation
            "Ordinary text, code_identifiers_of_some_length and base64+/== stay as they are.",
        ],
        ids=["spaced", "reversed", "prefix-only", "ordinary"],
    )
    def test_what_is_not_a_copy_stays(self, redactor: Redactor, text: str) -> None:
        """Text that holds no 10-character piece of the key is left alone."""
        assert redactor.redact_text(text) == text

    def test_keys_too_short_to_tell_from_text_are_not_looked_for(self) -> None:
        """A placeholder key such as `unused` would redact ordinary words: it is left out,
        and a redactor with nothing else to do is inactive."""
        redactor = Redactor.from_config(keys=["unused", "sk-x"])
        assert not redactor.active
        assert redactor.redact_text("unused sk-x") == "unused sk-x"

    def test_a_short_key_is_found_whole_in_any_case(self) -> None:
        """A key under 20 characters is found whole, in any letter case."""
        redactor = Redactor.from_config(keys=["sk-local-1234"])
        assert (
            redactor.redact_text("a SK-LOCAL-1234 b sk-local-123") == "a [REDACTED] b sk-local-123"
        )


class TestStreamedText:
    def test_words_are_shown_as_they_settle(self, redactor: Redactor) -> None:
        """With only keys to hide, text is shown up to its last character that no key holds;
        a key arriving in pieces is held back until its run ends, then redacted."""
        shown: list[str] = []
        held = ""
        for chunk in ["Your key", " is ", KEY[:15], KEY[15:], ", keep it", "."]:
            out, held = redactor.stream(held, chunk)
            shown.append(out)
        assert shown == ["Your ", "key is ", "", "", "[REDACTED], keep ", "it."]
        assert held == ""

    def test_with_a_pattern_whole_lines_are_shown(self) -> None:
        """A pattern may match across any characters, so only whole lines are settled."""
        redactor = Redactor.from_config(keys=[KEY], patterns=["tok [0-9]+"])
        assert redactor.stream("", "the tok ") == ("", "the tok ")
        assert redactor.stream("the tok ", "42 done\nnext") == ("the [REDACTED] done\n", "next")
