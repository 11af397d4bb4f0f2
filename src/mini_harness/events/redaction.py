"""Secrets in text: the marker that replaces one, and how an API key is found when it comes
back written a little differently (upper-cased, a character off, cut short).

A provider's key may come back from anywhere a model or a server writes: a normal answer,
a response id, tool arguments, an error message. A copy is rarely exact when a hostile
model is trying to get it past a filter, so a key is looked for by its pieces:

- the label a key may begin with, the same for all keys of a provider (`sk-proj-`,
  `sk-ant-api03-`), is not looked for: text about keys is not a key;
- the rest, when it has KEY_PIECE * 2 characters or more, is cut into pieces of KEY_PIECE
  characters (from its start, plus its last KEY_PIECE); any run of key characters
  (letters, digits, `-`, `_` and whatever else the key holds) that contains one of the
  pieces, in any letter case (ASCII), is a copy of the key and is replaced whole. A copy
  with one character changed, added or dropped for every KEY_PIECE characters of the key
  still holds a piece, and so does any 2 * KEY_PIECE - 1 consecutive characters of it;
- a shorter rest (at least MIN_KEY_LENGTH characters; else the whole key) is found whole,
  in any letter case, with the run around it;
- a key shorter than MIN_KEY_LENGTH is not looked for at all: it cannot be told from
  ordinary text (local servers take any key, such as `unused`).

Not caught: a key spelled out with other characters between its pieces, reversed,
encoded (base64, hex), or written with look-alike letters from outside ASCII.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping

import attrs

REDACTED = "[REDACTED]"
"""What a secret is replaced by, wherever it is written."""

KEY_PIECE = 10
MIN_KEY_LENGTH = 8

KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_")
"""The characters API keys are made of; a run of them around a piece of a key is redacted."""


_LABEL = re.compile(r"[a-z0-9-]{0,15}-")
"""The label many keys begin with, the same for every key of a provider (`sk-`,
`sk-proj-`, `sk-ant-api03-`): not what tells one key from text about keys."""


def key_pieces(key: str) -> tuple[str, ...]:
    """The pieces a copy of `key` is recognised by (none for a key too short to look for)."""
    if len(key) < MIN_KEY_LENGTH:
        return ()
    label = _LABEL.match(key)
    body = key[label.end() :] if label else key
    if len(body) < MIN_KEY_LENGTH:
        return (key,)
    if len(body) < 2 * KEY_PIECE:
        return (body,)
    starts = [*range(0, len(body) - KEY_PIECE + 1, KEY_PIECE), len(body) - KEY_PIECE]
    return tuple(dict.fromkeys(body[start : start + KEY_PIECE] for start in starts))


def key_characters(keys: Iterable[str]) -> frozenset[str]:
    """The characters a run that may hold one of `keys` is made of."""
    return KEY_CHARACTERS.union(*keys)


def key_pattern(key: str) -> str | None:
    """A regular expression that matches each copy of `key` (see the module's notes), or
    None for a key too short to look for.

    Letter case is ignored for ASCII letters only. The run is matched from its first
    character (a lookbehind says no key character comes before it) and lazily up to a
    piece, so a long run without a piece costs one pass.
    """
    pieces = key_pieces(key)
    if not pieces:
        return None
    run = "[" + "".join(re.escape(c) for c in sorted(key_characters([key]))) + "]"
    alternatives = "|".join(re.escape(piece) for piece in pieces)
    return f"(?ai:(?<!{run}){run}*?(?:{alternatives}){run}*+)"


@attrs.frozen
class KeyFinder:
    """Finds and replaces the copies of some keys in text."""

    pieces: tuple[str, ...]  # lower-cased: text without any of them holds no copy
    regex: re.Pattern[str]
    characters: frozenset[str]  # what a run that may hold a copy is made of

    @classmethod
    def of(cls, keys: Iterable[str]) -> KeyFinder | None:
        """The finder of `keys`; None when none is long enough to look for."""
        keys = sorted({key for key in keys if key_pieces(key)})
        if not keys:
            return None
        pieces = {piece.lower() for key in keys for piece in key_pieces(key)}
        regex = re.compile("|".join(p for p in map(key_pattern, keys) if p is not None))
        return cls(tuple(sorted(pieces)), regex, key_characters(keys))

    def redact(self, text: str, marker: str = REDACTED) -> str:
        """`text` with every copy of a key replaced by `marker`."""
        # Lower-casing and looking for each piece is a few C passes; the regex runs only
        # on the rare text that may hold a copy.
        lowered = text.lower()
        if not any(piece in lowered for piece in self.pieces):
            return text
        return self.regex.sub(marker, text)


PROVIDER_KEY_VARIABLES = {
    "deepseek": "DEEPSEEK_API_KEY",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
"""The variable that holds each remote model provider's API key, by the provider's name: the
one table of them. agent/providers/choice.py reads each provider's key from its variable
(and, without `--model`, chooses the provider of the first one set, in this order); every
command hides the keys they hold (`configured_keys`)."""


def configured_keys(env: Mapping[str, str]) -> tuple[str, ...]:
    """The API keys the environment gives the remote providers (whichever is chosen, if
    any): what no output may show, of a run or of any command that prints."""
    variables = PROVIDER_KEY_VARIABLES.values()
    return tuple(value for name in variables if (value := env.get(name, "").strip()))
