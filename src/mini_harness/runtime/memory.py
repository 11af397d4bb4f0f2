"""MemorySink: keeps a run's events in a list, numbered like a transcript file's lines."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import attrs

from mini_harness.events import Event, TranscriptStarted, new_id


@attrs.frozen
class Recorded:
    """An event with the position its sink gave it."""

    seq: int
    event: Event


class MemorySink:
    """Keeps events in a list; numbers them like a transcript file does, header included."""

    def __init__(self) -> None:
        self.transcript_id = new_id()
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemorySink(transcript_id={self.transcript_id!r}, events={len(self._events)})>"

    def emit(self, event: Event) -> None:
        with self._lock:
            if not self._events and not isinstance(event, TranscriptStarted):
                self._events.append(
                    TranscriptStarted(ts=event.ts, transcript_id=self.transcript_id)
                )
            self._events.append(event)

    def __iter__(self) -> Iterator[Recorded]:
        return (Recorded(seq, event) for seq, event in enumerate(list(self._events)))

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> list[Event]:
        """The events emitted so far, header included, in order."""
        return list(self._events)
