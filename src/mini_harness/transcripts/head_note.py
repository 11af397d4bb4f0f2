"""The text of a signed head: which transcript, which line (its seq and the full SHA-256
of its bytes), and when it was signed.

```
mini-harness.transcript/<transcriptId>
seq <the line's seq>
sha256 <64 lowercase hex digits: SHA-256 of the line's bytes, without its newline>
time <UTC, seconds: 2026-01-02T03:04:05Z>
```
"""

from __future__ import annotations

import datetime as dt
import re

import attrs

from mini_harness.errors import NoteFormatError

ORIGIN = "mini-harness.transcript/"
"""The first line of a signed head starts with this, then the transcript's id."""
_TEXT = re.compile(
    r"mini-harness\.transcript/(?P<id>[^\s/]+)\n"
    r"seq (?P<seq>0|[1-9][0-9]{0,18})\n"
    r"sha256 (?P<sha256>[0-9a-f]{64})\n"
    r"time (?P<time>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)\n"
)


def utc_now() -> str:
    """The current time as a signed head writes it."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.frozen
class HeadClaim:
    """What a signed head says: transcript `transcript_id` had, at seq `seq`, the line
    whose SHA-256 is `sha256`, when it was signed at `time`."""

    transcript_id: str
    seq: int
    sha256: str
    time: str

    def text(self) -> str:
        return (
            f"{ORIGIN}{self.transcript_id}\nseq {self.seq}\nsha256 {self.sha256}\n"
            f"time {self.time}\n"
        )

    @classmethod
    def parse(cls, text: str, source: str = "the note") -> HeadClaim:
        """The claim in a note's text; NoteFormatError when the text is not a signed head."""
        found = _TEXT.fullmatch(text)
        if found is None:
            first = text.split("\n", 1)[0]
            raise NoteFormatError(
                f"{source} is not the signed head of a mini-harness transcript (its text "
                f"starts {first[:60]!r}; a signed head's starts {ORIGIN!r})"
            )
        return cls(found["id"], int(found["seq"]), found["sha256"], found["time"])


@attrs.frozen
class SignedHead:
    """A signed head as verify takes it: the note's path and, when a trusted key's
    signature verified, its claim and the keys that signed it; else why it was refused."""

    note: str
    claim: HeadClaim | None = None
    signers: tuple[str, ...] = ()
    refused: str | None = None
