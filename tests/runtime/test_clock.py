"""The wall-clock timestamps every event carries."""

from __future__ import annotations

import datetime

import pytest

from mini_harness.events import utc_timestamp
from mini_harness.events import vocabulary as events


def _at(monkeypatch: pytest.MonkeyPatch, ns: int) -> str:
    monkeypatch.setattr(events, "_time_ns", lambda: ns)
    return utc_timestamp()


def test_microseconds_are_zero_padded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six digits of microseconds, whatever their value; nanoseconds are cut, not rounded."""
    second = 1_767_323_045 * 1_000_000_000  # 2026-01-02T03:04:05Z
    assert _at(monkeypatch, second) == "2026-01-02T03:04:05.000000Z"
    assert _at(monkeypatch, second + 123_999) == "2026-01-02T03:04:05.000123Z"
    assert _at(monkeypatch, second + 999_999_999) == "2026-01-02T03:04:05.999999Z"


def test_each_second_is_formatted_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """The formatted second is cached: a new second (forward or back) replaces it."""
    start = 1_767_323_045 * 1_000_000_000
    assert _at(monkeypatch, start + 5_000) == "2026-01-02T03:04:05.000005Z"
    assert _at(monkeypatch, start + 1_000_000_000) == "2026-01-02T03:04:06.000000Z"
    assert _at(monkeypatch, start - 1) == "2026-01-02T03:04:04.999999Z"
    assert _at(monkeypatch, start + 86_400 * 10**9) == "2026-01-03T03:04:05.000000Z"


def test_matches_the_system_clock() -> None:
    """The text parses as UTC and is close to datetime's own reading of the clock."""
    stamp = utc_timestamp()
    assert stamp.endswith("Z")
    parsed = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC)
    now = datetime.datetime.now(datetime.UTC)
    assert abs((now - parsed).total_seconds()) < 5
