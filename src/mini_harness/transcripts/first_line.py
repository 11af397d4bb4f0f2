"""Before writing to a file: is it a transcript, or what a crash while creating one leaves?"""

from __future__ import annotations

import os
from pathlib import Path

from mini_harness.errors import TranscriptFormatError
from mini_harness.events import FORMAT_VERSION
from mini_harness.transcripts.reader import NO_VERSION, HeaderError, read_header

_HEAD_BYTES = 64 * 1024
# The start of every header line a writer makes: the envelope is never redacted.
_HEADER_START = b'{"type":"TranscriptStarted",'
_JUNK = b"\0 \t\r\n"
_BOM = b"\xef\xbb\xbf"


def check_first_line(fd: int, path: str | os.PathLike[str]) -> None:
    """Raise TranscriptFormatError unless the file open at `fd` may be appended to.

    A complete first line must be a TranscriptStarted header. Without one, the content
    may only be what a crash while creating a transcript leaves (a cut header, or NULs
    and whitespace): a torn tail, which the first append sets aside. Anything else is
    somebody's file, and is never moved aside or written to.
    """
    head = os.pread(fd, _HEAD_BYTES, 0)
    newline = head.find(b"\n")
    if newline < 0:
        fragment = head.rstrip(b"\0")
        if (
            not head.strip(_JUNK)
            or _HEADER_START.startswith(fragment)
            or (fragment.startswith(_HEADER_START) and len(head) < _HEAD_BYTES)
        ):
            return
        why = "it has no TranscriptStarted line"
    else:
        first = head[len(_BOM) : newline] if head.startswith(_BOM) else head[:newline]
        try:
            read_header(first)  # as the readers check it: older files keep taking appends
        except HeaderError as exc:
            shown = Path(path)
            if exc.version is not None:
                raise TranscriptFormatError(
                    str(shown),
                    f"{shown} uses transcript format version {exc.version}; this mini-harness "
                    f"reads and writes versions 1 to {FORMAT_VERSION}: refusing to write to it",
                ) from None
            why = exc.why if exc.why == NO_VERSION else "line 1 is not TranscriptStarted"
        else:
            return
    shown = Path(path)
    raise TranscriptFormatError(
        str(shown), f"{shown} is not a mini-harness transcript ({why}); refusing to write to it"
    )
