"""Export: a transcript's runs as OpenTelemetry spans in the GenAI conventions, sent to a
collector over OTLP/HTTP or printed as OTLP JSON (`spans` and `mapping` need nothing but
the history; `otlp` and `live` need the `otel` extra: the OpenTelemetry SDK and its OTLP
exporter, imported only by them)."""
