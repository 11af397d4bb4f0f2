from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.export.collector import Collector


@pytest.fixture(name="collector")
def _collector() -> Iterator[Collector]:
    """A loopback OTLP/HTTP collector, running for the test."""
    with Collector() as collector:
        yield collector
