"""The OpenTelemetry SDK's side of the export: spans as the SDK's ReadableSpan, sent by its
OTLP/HTTP exporter (protobuf) or written as OTLP JSON, and the collector they go to.

The SDK comes with the `otel` extra; every function here that needs it imports it when
called, and `require_sdk` says how to install it when it is missing. The collector is
found as every OpenTelemetry SDK finds it (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
OTEL_EXPORTER_OTLP_ENDPOINT with `/v1/traces`, else http://localhost:4318/v1/traces), its
headers in OTEL_EXPORTER_OTLP_(TRACES_)HEADERS; OTEL_SERVICE_NAME names the service.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mini_harness._version import __version__
from mini_harness.errors import TelemetryError, TelemetrySendError
from mini_harness.events import JsonObject
from mini_harness.export.spans import SpanData

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

INSTALL = 'pip install "mini-harness[otel]"'
"""How to get the SDK and the OTLP exporter."""

DEFAULT_ENDPOINT = "http://localhost:4318/"
TRACES_PATH = "v1/traces"
SCOPE = "mini_harness"
"""The instrumentation scope of every span."""

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' opt-in to message content (`true`, `span_only` or `span_and_event`)."""

_BYTE_FIELDS = ("traceId", "spanId", "parentSpanId")


def require_sdk() -> None:
    """Raise TelemetryError (exit 2, with the install line) unless the SDK and its OTLP/HTTP
    exporter can be imported."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise TelemetryError(
            f"OpenTelemetry export needs the OpenTelemetry SDK and its OTLP exporter "
            f"({exc.name or exc} cannot be imported): {INSTALL}"
        ) from None


def content_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the conventions' variable asks for message content."""
    value = environ.get(CONTENT_VARIABLE, "").strip().lower()
    return value in {"true", "1", "span_only", "span_and_event"}


@attrs.frozen
class Collector:
    """Where spans go: the traces URL and the headers given on the command line (those
    of the environment are added by the exporter)."""

    endpoint: str
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)  # may hold secrets

    @classmethod
    def resolve(
        cls,
        endpoint: str | None = None,
        headers: Iterable[str] = (),
        environ: Mapping[str, str] = os.environ,
    ) -> Collector:
        """The collector `--endpoint` names (a base URL, to which `/v1/traces` is added, or
        a URL ending in `/v1/traces`), else the environment's; `headers` are `K=V` (each
        may list several, comma-separated). A malformed one is a TelemetryError."""
        if endpoint is not None:
            url = endpoint if _is_traces_url(endpoint) else _traces_url(endpoint)
        elif traces := environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
            url = traces
        else:
            url = _traces_url(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise TelemetryError(f"the OTLP endpoint {url!r} is not an http:// or https:// URL")
        return cls(url, _headers(headers))

    def exporter(self) -> SpanExporter:
        """The SDK's OTLP/HTTP exporter for this collector (its timeout is
        OTEL_EXPORTER_OTLP_TIMEOUT's, 10 seconds by default)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=self.endpoint, headers=dict(self.headers) or None)


def _is_traces_url(url: str) -> bool:
    return urllib.parse.urlsplit(url).path.rstrip("/").endswith("/" + TRACES_PATH)


def _traces_url(base: str) -> str:
    return f"{(base or DEFAULT_ENDPOINT).rstrip('/')}/{TRACES_PATH}"


def _headers(given: Iterable[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in given:
        for pair in item.split(","):
            name, equals, value = pair.partition("=")
            name = urllib.parse.unquote(name).strip().lower()
            if not equals or not name:
                raise TelemetryError(f"--headers takes NAME=VALUE, not {pair.strip()!r}")
            headers[name] = urllib.parse.unquote(value).strip()
    return headers


def resource() -> Resource:
    """The service the spans come from: OTEL_SERVICE_NAME (or the `service.name` of
    OTEL_RESOURCE_ATTRIBUTES), else `mini-harness`, with this version. The SDK's random
    `service.instance.id` is left out (unless OTEL_RESOURCE_ATTRIBUTES sets one): spans
    made again of the same transcript come from the same service."""
    from opentelemetry.sdk.resources import Resource

    found = dict(Resource.create().attributes)
    if "service.instance.id=" not in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
        found.pop("service.instance.id", None)
    name = found.get("service.name")
    if not isinstance(name, str) or name.startswith("unknown_service"):
        found["service.name"] = "mini-harness"
    found["service.version"] = __version__
    return Resource(found)


def readable_spans(
    spans: Iterable[SpanData], service: Resource | None = None
) -> list[ReadableSpan]:
    """The spans as the SDK's ReadableSpan, ready for any of its exporters."""
    from opentelemetry import trace as api
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace.status import Status, StatusCode

    service = service if service is not None else resource()
    scope = InstrumentationScope(SCOPE, __version__)
    sampled = api.TraceFlags(api.TraceFlags.SAMPLED)
    kinds = {"INTERNAL": api.SpanKind.INTERNAL, "CLIENT": api.SpanKind.CLIENT}

    def context(trace: int, span: int, *, remote: bool = False) -> api.SpanContext:
        return api.SpanContext(trace, span, is_remote=remote, trace_flags=sampled)

    out = []
    for span in spans:
        status = (
            Status(StatusCode.ERROR, span.status_message)
            if span.status == "ERROR"
            else Status(StatusCode.UNSET)
        )
        parent = span.parent_id
        out.append(
            ReadableSpan(
                name=span.name,
                context=context(span.trace_id, span.span_id),
                parent=None if parent is None else context(span.trace_id, parent),
                resource=service,
                attributes=dict(span.attributes),
                events=[Event(e.name, dict(e.attributes), e.time_ns) for e in span.events],
                links=[
                    api.Link(
                        context(link.trace_id, link.span_id, remote=True), dict(link.attributes)
                    )
                    for link in span.links
                ],
                kind=kinds[span.kind],
                status=status,
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


def otlp_json(spans: Sequence[SpanData]) -> JsonObject:
    """The spans as one OTLP/JSON ExportTraceServiceRequest (what `export otel --json`
    prints): the protobuf message the exporter sends, in the JSON mapping OTLP specifies
    (ids as hex, enums as numbers, 64-bit integers as strings)."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message = encode_spans(readable_spans(spans))
    document: JsonObject = json_format.MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(document)
    return document


def _hex_ids(value: Any) -> None:
    """Turn the base64 of protobuf's JSON mapping into OTLP's hex, for every id field."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _BYTE_FIELDS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)


class SdkMessages(logging.Handler):
    """Takes what the SDK logs (an export that failed, a full queue) so that it never
    reaches the terminal as a traceback or a stray line: `said` is called with the first
    message only (a warning is given once), and every message is kept in `messages`."""

    def __init__(self, said: Callable[[str], None] | None = None) -> None:
        super().__init__(logging.WARNING)
        self._said = said
        self._kept_lock = threading.Lock()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        with self._kept_lock:
            first = not self.messages
            if len(self.messages) < 100:
                self.messages.append(text)
        if first and self._said is not None:
            self._said(text)

    def install(self) -> SdkMessages:
        """Take the SDK's messages from now on (until `uninstall`)."""
        logger = logging.getLogger("opentelemetry")
        self._saved = (logger.propagate, logger.level)
        logger.addHandler(self)
        logger.propagate = False
        if logger.level == logging.NOTSET or logger.level > logging.WARNING:
            logger.setLevel(logging.WARNING)
        return self

    def mute(self) -> None:
        """Say nothing more (the messages are still taken, and kept)."""
        self._said = None

    def uninstall(self) -> None:
        logger = logging.getLogger("opentelemetry")
        logger.removeHandler(self)
        logger.propagate, level = self._saved
        logger.setLevel(level)

    def __enter__(self) -> SdkMessages:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()


SEND_BATCH = 512
"""Spans sent in one request by `send`."""


def send(collector: Collector, spans: Sequence[SpanData]) -> None:
    """Send `spans` to the collector, SEND_BATCH at a time; a request it does not take
    (after the exporter's own retries) is a TelemetrySendError that says why."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = collector.exporter()
    service = resource()
    with SdkMessages() as said:
        try:
            for start in range(0, len(spans), SEND_BATCH):
                batch = readable_spans(spans[start : start + SEND_BATCH], service)
                if exporter.export(batch) is not SpanExportResult.SUCCESS:
                    why = said.messages[0] if said.messages else "no reason given"
                    raise TelemetrySendError(
                        f"the collector at {collector.endpoint} did not take the spans: {why}"
                    )
        finally:
            exporter.shutdown()
