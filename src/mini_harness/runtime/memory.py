"""MemorySink: keeps a run's events in a list, numbered like a transcript file's lines."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from mini_harness.events import Event, TranscriptStarted, new_id


@attrs.frozen
class Recorded:
    """An event with the position its sink gave it."""

    seq: int
    event: Event


@attrs.define
class MemorySink:
    """Keeps events in a list; numbers them like a transcript file does, header included."""

    transcript_id: str = attrs.field(factory=new_id)
    _records: list[Recorded] = attrs.field(factory=list, repr=False)

    def emit(self, event: Event) -> None:
        if not self._records and not isinstance(event, TranscriptStarted):
            header = TranscriptStarted(ts=event.ts, transcript_id=self.transcript_id)
            self._records.append(Recorded(0, header))
        self._records.append(Recorded(len(self._records), event))

    def __iter__(self) -> Iterator[Recorded]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    @property
    def events(self) -> list[Event]:
        """The events emitted so far, header included, in order."""
        return [r.event for r in self._records]
