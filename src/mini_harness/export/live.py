"""Spans sent as a run goes (`--otel`): the events a run emits are folded, in a thread of
their own, by the one fold every reader of a history uses, into the same spans `export
otel` makes of its transcript; each span goes to the OpenTelemetry SDK's batch processor
as soon as what it stands for has ended (a call, a model request, a run).

The run never waits for the collector: an event is handed over by putting it on a queue,
the batch processor holds at most OTEL_BSP_MAX_QUEUE_SIZE spans (2048) and sends them
from its own thread, and at the end the spans still queued get CLOSE_GRACE seconds (none
once an export failed or was retried). A collector that cannot be reached, or is slow,
or a full queue, is said once, as a warning.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from mini_harness.events import Event, EventSink, TranscriptStarted
from mini_harness.export.mapping import SpanMapper
from mini_harness.export.otlp import Collector, SdkMessages, readable_spans, resource
from mini_harness.export.spans import SpanData
from mini_harness.replay.history import Call, Run, TranscriptFold
from mini_harness.transcripts import JsonlTranscript, TornTail, TranscriptRecord
from mini_harness.transcripts.reader import IntegrityProblem

CLOSE_GRACE = 2.0
"""Seconds the spans still queued when a run ends get to reach the collector."""

_END = object()


class LiveExport:
    """The live export of one command's runs to `collector` (or to `exporter`, which tests
    give). `wrap` a run's sink to feed it; `close` when the command is done. With
    `content`, spans carry what was said; `redact` rewrites every string they carry;
    `warn` is told, once, what went wrong with the export."""

    def __init__(
        self,
        collector: Collector,
        *,
        content: bool = False,
        redact: Callable[[str], str] | None = None,
        warn: Callable[[str], None],
        exporter: SpanExporter | None = None,
    ) -> None:
        self.collector = collector
        self._warn = warn
        self._warned = False
        self._messages = SdkMessages(self._said).install()
        self._exporter = _Counting(exporter if exporter is not None else collector.exporter())
        self._processor = BatchSpanProcessor(self._exporter)
        self._resource = resource()
        self._content = content
        self._redact = redact
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._handed = 0
        self._thread = threading.Thread(target=self._fold, name="mini-harness-otel", daemon=True)
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"<LiveExport(endpoint={self.collector.endpoint!r}, spans={self._handed})>"

    def wrap(self, sink: EventSink, transcript: JsonlTranscript | None = None) -> EventSink:
        """`sink`, whose events also go to the export once it has recorded them;
        `transcript` is the file they are recorded in (its id is the conversation's)."""
        if not self._started:
            self._started = True
            self._thread.start()
        return _Tee(sink, self, transcript)

    def add(self, event: Event) -> None:
        """Hand an event to the export (never waits)."""
        self._events.put(event)

    def close(self) -> None:
        """Fold what is left, and give the spans still queued CLOSE_GRACE seconds to reach
        the collector; say once if some did not."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            self._events.put(_END)
            self._thread.join()
        ending = threading.Thread(target=self._processor.shutdown, daemon=True)
        ending.start()
        deadline = time.monotonic() + CLOSE_GRACE
        while ending.is_alive() and time.monotonic() < deadline and not self._troubled:
            ending.join(0.02)
        if ending.is_alive():  # a collector that failed, or is slow: no more retries
            self._exporter.shutdown()
            ending.join(0.2)
        lost = self._handed - self._exporter.sent
        if lost > 0:
            self._said(
                f"{lost} of {self._handed} spans did not reach the collector at "
                f"{self.collector.endpoint}"
            )
        self._messages.mute()  # the SDK's threads may still say something: never shown

    @property
    def _troubled(self) -> bool:
        """Whether an export failed, or the SDK said something is wrong (a retry)."""
        return self._exporter.failed or bool(self._messages.messages)

    def _said(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            message = _reason(message)
            where = self.collector.endpoint
            self._warn(f"OpenTelemetry export to {where}: {message} (the run goes on without it)")

    # --- the fold, in its own thread --------------------------------------------------

    def _fold(self) -> None:
        source = _LiveRecords(self._events)
        fold = TranscriptFold("live run", requests=True, detail=True, source=source)
        done = _Done(fold, self._content)
        source.between = lambda: self._hand(done.ready())
        try:
            for item in fold:
                if isinstance(item, Run):
                    done.started(item)
                else:
                    self._hand(done.call(item))
            self._hand(done.ready(ending=True))
        except Exception as exc:
            self._said(f"the spans could not be made ({type(exc).__name__}: {exc})")
            while source.pull() is not _END:  # drain, so that close() returns
                pass

    def _hand(self, spans: Sequence[SpanData]) -> None:
        redact = self._redact
        if redact is not None:
            spans = [span.redacted(redact) for span in spans]
        for span in readable_spans(spans, self._resource):
            self._handed += 1
            self._processor.on_end(span)


def _reason(message: str) -> str:
    """The SDK's message, without what changes from one attempt to the next (its retry
    delay is random): `Transient error X encountered while exporting spans batch,
    retrying in 1.07s.` is `X`."""
    found = _TRANSIENT.fullmatch(message)
    return found.group(1) if found else message


_TRANSIENT = re.compile(r"Transient error (.*) encountered while exporting .*", re.S)


class _Tee:
    """A run's sink that hands each event to the live export once the sink recorded it
    (an event the sink could not record raised, and is not exported)."""

    def __init__(
        self, sink: EventSink, live: LiveExport, transcript: JsonlTranscript | None
    ) -> None:
        self.sink = sink
        self._live = live
        self._transcript = transcript
        self._first = True

    def __repr__(self) -> str:
        return f"<_Tee(sink={self.sink!r})>"

    def emit(self, event: Event) -> None:
        self.sink.emit(event)
        if self._first:
            self._first = False
            transcript_id = self._transcript.transcript_id if self._transcript else None
            if transcript_id is not None:  # the conversation's id, as in the file
                self._live.add(TranscriptStarted(ts=event.ts, transcript_id=transcript_id))
        self._live.add(event)


class _LiveRecords:
    """The events handed to the export, as the records a fold reads; `between` is called
    each time the fold asks for the next one (what ended with the last can be sent)."""

    def __init__(self, events: queue.SimpleQueue[object]) -> None:
        self.name = "live run"
        self.empty = False
        self.problems: list[IntegrityProblem] = []  # a run's events break no chain
        self.torn_tail: TornTail | None = None
        self.records_read = 0
        self.head_hash: str | None = None
        self.between: Callable[[], None] = lambda: None
        self._events = events

    def pull(self) -> object:
        return self._events.get()

    def __iter__(self) -> Iterator[TranscriptRecord]:
        while True:
            self.between()
            event = self.pull()
            if event is _END:
                return
            line = self.records_read + 1
            self.records_read = line
            yield TranscriptRecord(line, 0, line - 1, None, "", event)  # type: ignore[arg-type]


class _Done:
    """What of a live fold has ended and was not sent yet: calls as the fold yields them,
    model requests once answered (or once their run moved on), runs once finished, and at
    the end everything else."""

    def __init__(self, fold: TranscriptFold, content: bool) -> None:
        self._fold = fold
        self._content = content
        self._mapper: SpanMapper | None = None
        self._runs: dict[str, Run] = {}  # the runs started and not finished
        self._sent: dict[str, int] = {}  # each run's steps sent (they end in order)

    @property
    def mapper(self) -> SpanMapper:
        if self._mapper is None:  # made once the transcript's id was read, if there is one
            conversation = self._fold.history.transcript_id
            self._mapper = SpanMapper(conversation, content=self._content)
        return self._mapper

    def started(self, run: Run) -> None:
        self._runs[run.run_id] = run

    def call(self, call: Call) -> list[SpanData]:
        run = self._runs.get(call.run_id)
        return [] if run is None else self.mapper.call_spans(run, call)

    def ready(self, *, ending: bool = False) -> list[SpanData]:
        """The spans of what ended since the last time (with `ending`: of everything)."""
        spans: list[SpanData] = []
        for run in list(self._runs.values()):
            steps = run.steps if run.keeps else []
            sent = self._sent.get(run.run_id, 0)
            over = ending or run.finished is not None
            while sent < len(steps):
                step = steps[sent]
                moved_on = over or sent + 1 < len(steps)
                if not (step.response or moved_on):
                    break
                spans.append(self.mapper.step_span(run, step))
                sent += 1
            self._sent[run.run_id] = sent
            if over:
                spans.append(self.mapper.run_span(run))
                del self._runs[run.run_id]
        return spans


class _Counting(SpanExporter):
    """The exporter, counting the spans it was given that the collector took; shut down
    once, whoever asks first."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._down = False
        self.sent = 0
        self.failed = False  # an export failed: the collector is unreachable, or refused

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed = True
        return result

    def shutdown(self) -> None:
        with self._lock:
            if self._down:
                return
            self._down = True
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)
