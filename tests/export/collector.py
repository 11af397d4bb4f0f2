"""A loopback OTLP/HTTP collector for the export tests: it decodes every request as the
protobuf ExportTraceServiceRequest an OpenTelemetry collector receives, and keeps the
spans; it can be made slow."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


class Collector:
    """Receives OTLP/HTTP trace exports at `endpoint` (`.../v1/traces`); `delay` seconds
    before each answer make it slow."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with collector._lock:
                    collector.requests.append(request)
                    collector.headers.append({k.lower(): v for k, v in self.headers.items()})
                if collector.delay:
                    time.sleep(collector.delay)
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}/v1/traces"

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[Any]:
        """Every span received, in the order received."""
        with self._lock:
            requests = list(self.requests)
        return [
            span
            for request in requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


def attributes(span: Any) -> dict[str, Any]:
    """A received span's attributes as plain values."""
    return {item.key: _value(item.value) for item in span.attributes}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    return getattr(value, kind)


def span_key(span: Any) -> tuple[object, ...]:
    """What two exports of the same span must agree on: ids, name, times, attributes and
    links."""
    return (
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        tuple(sorted(attributes(span).items())),
        tuple((link.trace_id, link.span_id) for link in span.links),
    )
